/**
 * More accept handles on one listening socket (issue 26, overload). Node 20's libuv takes
 * at most one connection from a listening handle per turn of the event loop (libuv 1.45,
 * "don't accept() connections in a loop"). Under load a turn lasts tens of milliseconds,
 * so a burst of new connections waited in the kernel's accept queue for as long as the
 * load lasted (measured: 20 accepts a second, new connections answered after 29 s), where
 * no limit of the process sees them. Each extra handle on the same socket accepts one more
 * connection per turn.
 *
 * Node 20 cannot open a second listener on a port (`reusePort` came in Node 22.12) and has
 * no dup(2), but a descriptor sent over an IPC channel arrives as a new descriptor of the
 * same socket (SCM_RIGHTS): the listening server is sent to a short-lived child process
 * and back, once per extra handle. While the child holds its copies it reads nothing
 * (pauseOnConnect) and sends back any connection it accepted, so none is lost; it exits
 * once it has returned them all. Each listen(2) of a copy sets the socket's backlog again
 * (node's default, 511), so the parent listens on each with the service's backlog.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Server, type Socket } from "node:net";

/**
 * The child: returns each listener it is sent, and each connection a copy took meanwhile;
 * once every copy is closed it disconnects (after what it is still sending) and exits, as
 * it does at once when the parent goes away.
 */
const ECHO_CHILD = `
// The parent gone (killed while starting), its copies must not keep the port open.
process.on("disconnect", () => process.exit(0));
let closed = 0;
process.on("message", (count, server) => {
  if (!server) return;
  server.pauseOnConnect = true;
  server.on("connection", (socket) => process.send("connection", socket));
  process.send("listener", server, () => {
    server.close();
    if (++closed === count) process.disconnect();
  });
});
`;

/** How long the child may take to return the handles before the service goes on without. */
const DUPLICATION_TIMEOUT_MS = 10_000;

/**
 * Duplicates of `server`'s listening socket, `count` of them, each a listening
 * `net.Server` whose connections go to `onConnection` (as do connections the child
 * accepted meanwhile). Rejects when the child cannot be started or does not answer;
 * the caller then serves with the one handle it has.
 */
export function duplicateListener(
  server: Server,
  count: number,
  backlog: number,
  onConnection: (socket: Socket) => void,
): Promise<Server[]> {
  if (count <= 0) return Promise.resolve([]);
  return new Promise<Server[]>((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, ["-e", ECHO_CHILD], {
      // Neither the parent's flags (--import tsx, --cpu-prof) nor NODE_OPTIONS: a bare node.
      env: {},
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    const listeners: Server[] = [];
    const timer = setTimeout(() => fail(new Error("timed out")), DUPLICATION_TIMEOUT_MS);
    let failed = false;
    const fail = (error: Error) => {
      if (failed) return;
      failed = true;
      clearTimeout(timer);
      for (const listener of listeners) listener.close();
      child.kill();
      reject(error);
    };
    child.once("error", fail);
    // Done once the child has exited and its channel is closed (every message read):
    // until then it holds copies of the socket, and a connection one of them took may be
    // on its way here.
    let ended = 0;
    const end = () => {
      if (++ended < 2 || failed) return;
      if (listeners.length < count) {
        fail(new Error("the child ended before returning every handle"));
        return;
      }
      clearTimeout(timer);
      resolve(listeners);
    };
    child.once("exit", end);
    child.once("disconnect", end);
    child.on("message", (message, handle) => {
      if (message === "connection" && handle) {
        onConnection(handle as Socket);
      } else if (message === "listener" && handle) {
        // Node has already listened on the copy, with its default backlog: listened on
        // again (its handle taken by a server of ours) with the service's.
        listeners.push(new Server(onConnection).listen(handle as Server, backlog));
      }
    });
    try {
      for (let i = 0; i < count; i++) child.send(count, server);
    } catch (error) {
      fail(error instanceof Error ? error : new Error(String(error)));
    }
  });
}
