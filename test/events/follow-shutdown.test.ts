/**
 * A graceful stop does not wait for followers: on SIGTERM every open follow stream ends
 * at once with the 503 "shutting down" error event (its client resumes, from the last
 * logIndex received, on another instance), and the process exits well before
 * SHUTDOWN_TIMEOUT_SECONDS, which it used to wait out for every open stream.
 */
import * as http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment, Plan } from "../../gen/audit/v1/admin_pb.js";
import { createAdminClient } from "../../src/admin/admin-client.js";
import { type ServiceProcess, spawnService } from "../support/service-process.js";

const SHUTDOWN_TIMEOUT_SECONDS = 30;

/** Opens an SSE follow stream; resolves with everything it received once it ends. */
function follow(port: number, secret: string, opened: () => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      {
        host: "127.0.0.1",
        port,
        path: "/api/events/stream",
        agent: false,
        headers: { authorization: `Bearer ${secret}`, accept: "text/event-stream" },
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          if (text === "") opened();
          text += chunk;
        });
        response.on("end", () => resolve(text));
        response.on("error", reject);
      },
    );
    request.on("error", reject);
  });
}

describe("SIGTERM with follow streams open", () => {
  let service: ServiceProcess;
  let received: string[];
  let exit: { code: number | null; signal: NodeJS.Signals | null };
  let exitMs: number;

  beforeAll(async () => {
    service = await spawnService({ SHUTDOWN_TIMEOUT_SECONDS: String(SHUTDOWN_TIMEOUT_SECONDS) });
    const admin = createAdminClient(`http://127.0.0.1:${service.port}`, service.adminToken);
    const { project } = await admin.createProject({ name: "followers", plan: Plan.PRO });
    const { secret } = await admin.createApiKey({
      projectId: project?.id ?? "",
      environment: Environment.TEST,
    });
    let open = 0;
    let allOpen: () => void = () => {};
    const opened = new Promise<void>((resolve) => {
      allOpen = resolve;
    });
    const streams = Array.from({ length: 3 }, () =>
      follow(service.port, secret, () => {
        if (++open === 3) allOpen();
      }),
    );
    await opened;
    const signalAt = Date.now();
    service.child.kill("SIGTERM");
    exit = await service.exited;
    exitMs = Date.now() - signalAt;
    received = await Promise.all(streams);
  });

  afterAll(async () => {
    await service?.cleanup();
  });

  it("exits 0 without waiting out the shutdown timeout", () => {
    expect(exit).toEqual({ code: 0, signal: null });
    expect(exitMs).toBeLessThan((SHUTDOWN_TIMEOUT_SECONDS / 2) * 1000);
  });

  it("ends each stream with the shutting-down error event", () => {
    for (const text of received) {
      expect(text).toContain(
        'event: error\ndata: {"error":"Service temporarily unavailable: this instance is shutting down"}\n\n',
      );
    }
  });
});
