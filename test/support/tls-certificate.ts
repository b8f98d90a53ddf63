/** A throwaway self-signed certificate for localhost and 127.0.0.1, made with openssl. */
import { execFile } from "node:child_process";

/** Writes the certificate and its key (P-256) to the given files. */
export function makeCertificate(certFile: string, keyFile: string): Promise<void> {
  const args = [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-subj",
    "/CN=localhost",
    "-days",
    "1",
    "-addext",
    "subjectAltName=DNS:localhost,IP:127.0.0.1",
    "-keyout",
    keyFile,
    "-out",
    certFile,
  ];
  return new Promise((resolve, reject) => {
    execFile("openssl", args, { timeout: 30_000 }, (error, _stdout, stderr) => {
      if (!error) resolve();
      else if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        reject(
          new Error(
            "openssl was not found on PATH: the TLS tests make their certificate with it " +
              "(Debian/Ubuntu: apt-get install openssl)",
          ),
        );
      } else reject(new Error(`openssl could not make a certificate: ${error.message}\n${stderr}`));
    });
  });
}
