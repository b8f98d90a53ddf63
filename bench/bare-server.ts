/**
 * Reference 1: the ceiling of Node's HTTP on this machine. Reads and parses the JSON
 * body and answers 201 with an id, storing nothing.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 0);
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const body = JSON.stringify({ eventId: randomUUID(), receivedAt: new Date().toISOString() });
    res.writeHead(201, { "content-type": "application/json" }).end(body);
  });
});
server.listen(port, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(
    `${JSON.stringify({ port: typeof address === "object" ? address?.port : 0 })}\n`,
  );
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
