import { afterEach, describe, expect, it } from "vitest";
import { createPeriodicTask, type PeriodicTask } from "../src/periodic-task.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function recordingLogger() {
  const warnings: string[] = [];
  return { warnings, warn: (_facts: object, message: string) => warnings.push(message) };
}

describe("createPeriodicTask", () => {
  const tasks: PeriodicTask<unknown>[] = [];
  afterEach(async () => {
    await Promise.all(tasks.splice(0).map((task) => task.stop()));
  });

  it("runs at start when asked, then again after each interval", async () => {
    let runs = 0;
    const task = createPeriodicTask(async () => ++runs, {
      intervalMs: 20,
      logger: recordingLogger(),
      what: "counting",
      runAtStart: true,
    });
    tasks.push(task);
    task.start();
    await sleep(5);
    expect(runs).toBe(1);
    await sleep(120);
    expect(runs).toBeGreaterThanOrEqual(3);
  });

  it("waits for the first interval otherwise, and starts only once", async () => {
    let runs = 0;
    const task = createPeriodicTask(async () => ++runs, {
      intervalMs: 60,
      logger: recordingLogger(),
      what: "counting",
    });
    tasks.push(task);
    task.start();
    task.start();
    await sleep(20);
    expect(runs).toBe(0);
    await sleep(80);
    expect(runs).toBe(1);
  });

  it("never overlaps two runs, runNow included", async () => {
    let active = 0;
    let maxActive = 0;
    const task = createPeriodicTask(
      async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        await sleep(15);
        active--;
      },
      { intervalMs: 1, logger: recordingLogger(), what: "slow", runAtStart: true },
    );
    tasks.push(task);
    task.start();
    await Promise.all([task.runNow(), task.runNow(), task.runNow()]);
    expect(maxActive).toBe(1);
  });

  it("logs a failing run once a minute, keeps running, and gives runNow the error", async () => {
    const logger = recordingLogger();
    let runs = 0;
    const task = createPeriodicTask(
      async () => {
        runs++;
        throw new Error("database away");
      },
      { intervalMs: 5, logger, what: "publishing", runAtStart: true },
    );
    tasks.push(task);
    task.start();
    await sleep(100);
    expect(runs).toBeGreaterThanOrEqual(5);
    expect(logger.warnings).toEqual(["publishing failed; retrying"]);
    await expect(task.runNow()).rejects.toThrow("database away");
  });

  it("stop waits for the run in progress, which sees stopped(), and nothing runs after", async () => {
    let steps = 0;
    let runs = 0;
    const task: PeriodicTask<void> = createPeriodicTask(
      async () => {
        runs++;
        while (!task.stopped()) {
          steps++;
          await sleep(5);
        }
      },
      { intervalMs: 5, logger: recordingLogger(), what: "long run", runAtStart: true },
    );
    task.start();
    await sleep(30);
    await task.stop();
    const stepsAtStop = steps;
    await sleep(40);
    expect(runs).toBe(1);
    expect(steps).toBe(stepsAtStop);
    task.start();
    await sleep(20);
    expect(runs).toBe(1);
  });
});
