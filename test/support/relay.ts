/**
 * A TCP relay on 127.0.0.1 in front of a real server (PostgreSQL, Redis), so that a test
 * can make the dependency disappear and come back without touching the machine's own
 * service, which other suites share.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP relay on 127.0.0.1 to a real server. `cut` drops every connection and stops
 * listening (the server looks stopped: connections reset, new ones refused); `open`
 * listens again on the same port.
 */
export class Relay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;
  /** Client connections accepted since the relay was made. */
  accepted = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  async open(): Promise<void> {
    const server = createServer((client) => {
      this.accepted++;
      const upstream = connect(this.targetPort, this.host);
      this.sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on("error", drop).on("close", drop);
      upstream.on("error", drop).on("close", drop);
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    const address = server.address();
    if (address && typeof address === "object") this.port = address.port;
    this.server = server;
  }

  /** How many client connections pass through now. */
  connections(): number {
    return this.sockets.size / 2;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
