/**
 * The port's connection cap follows the process's file-descriptor limit: with a cap above
 * it, idle connections used up the descriptors and every request, health checks included,
 * got an empty reply (a `ulimit -n 200` process with 140 preface-only HTTP/2 clients).
 */
import { describe, expect, it } from "vitest";
import {
  connectionCap,
  extraAcceptHandles,
  MAX_CONNECTIONS,
  openFilesLimit,
} from "../../src/transport/server.js";

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            200                  4096                 files
Max locked memory         8388608              8388608              bytes
`;

describe("the connection cap", () => {
  it("reads the soft limit of open files", () => {
    expect(openFilesLimit(LIMITS)).toBe(200);
    expect(openFilesLimit("Max open files            unlimited            unlimited")).toBe(
      undefined,
    );
    if (process.platform === "linux") expect(openFilesLimit()).toBeGreaterThan(0);
  });

  it("keeps descriptors for the database and files under a low limit, and is MAX_CONNECTIONS under a high one", () => {
    expect(connectionCap(200)).toBe(71);
    expect(connectionCap(1_024)).toBe(895);
    // Each accept handle holds a descriptor.
    expect(connectionCap(1_024, 64)).toBe(832);
    expect(connectionCap(100)).toBe(16);
    expect(connectionCap(1_048_576)).toBe(MAX_CONNECTIONS);
    expect(connectionCap(undefined)).toBe(MAX_CONNECTIONS);
  });

  it("gives the port at most a sixteenth of the open-files limit as extra accept handles", () => {
    expect(extraAcceptHandles(63, 1_048_576)).toBe(63);
    expect(extraAcceptHandles(63, 1_024)).toBe(63);
    expect(extraAcceptHandles(63, 200)).toBe(11);
    expect(extraAcceptHandles(63, 16)).toBe(0);
    expect(extraAcceptHandles(63, undefined)).toBe(63);
  });
});
