/** Waiting for the verifiable log's checkpoints in tests. */
import type { createLogClient } from "../../src/cli/log-client.js";

/** The first published checkpoint of at least `size` events (polls for up to 20 s). */
export async function checkpointCovering(
  client: ReturnType<typeof createLogClient>,
  size: number,
): Promise<string> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const note = await client.checkpoint().catch(() => "");
    if (Number(note.split("\n")[1]) >= size) return note;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no checkpoint covering ${size}`);
}
