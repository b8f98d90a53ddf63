/**
 * A server on the service's `listen` (transport/server.ts) whose event loop is kept
 * busy, as under load: every turn spends BUSY_MS in a timer. It answers every request
 * `ok`, prints its port on stdout, and runs until killed.
 *
 * Usage: node --import tsx test/support/busy-listener.ts <extra accept handles>
 */
import { listen } from "../../src/transport/server.js";

const BUSY_MS = 40;

const server = await listen((_req, res) => res.end("ok"), {
  host: "127.0.0.1",
  port: 0,
  extraAcceptHandles: Number(process.argv[2] ?? 0),
});
process.stdout.write(`${server.port}\n`);
// A timer due at every turn: each turn of the loop then lasts at least BUSY_MS.
setInterval(() => {
  const until = performance.now() + BUSY_MS;
  while (performance.now() < until);
}, 0);
