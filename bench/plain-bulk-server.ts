/**
 * The plain reference for bulk ingestion: what a team would write themselves. One
 * handler: parse `{"events": [...]}`, check the key with one query, insert the batch with
 * one multi-row INSERT (autocommit: the answer goes out after the commit), answer 201
 * with an id and time per event. No encryption, idempotency, limits, validation or log.
 */
import { createHash, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import postgres from "postgres";

const [portArg, url] = process.argv.slice(2);
if (!url) throw new Error("usage: plain-bulk-server <port> <database url>");
const sql = postgres(url, { max: 10, onnotice: () => {} });

await sql`create table if not exists plain_keys (key_hash text primary key, project_id uuid not null)`;
await sql`create table if not exists plain_events (id uuid primary key, project_id uuid not null,
  received_at timestamptz not null, body jsonb not null)`;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", async () => {
    try {
      const { events } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        events: Record<string, unknown>[];
      };
      const key = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      const hash = createHash("sha256").update(key).digest("hex");
      const [found] = await sql`select project_id from plain_keys where key_hash = ${hash}`;
      if (!found) {
        res
          .writeHead(401, { "content-type": "application/json" })
          .end('{"error":"Invalid API key"}');
        return;
      }
      const receivedAt = new Date();
      const rows = events.map((event) => ({
        id: randomUUID(),
        project_id: found.project_id as string,
        received_at: receivedAt,
        body: JSON.stringify(event),
      }));
      await sql`insert into plain_events ${sql(rows, "id", "project_id", "received_at", "body")}`;
      const at = receivedAt.toISOString();
      res
        .writeHead(201, { "content-type": "application/json" })
        .end(JSON.stringify({ results: rows.map((row) => ({ eventId: row.id, receivedAt: at })) }));
    } catch {
      res
        .writeHead(500, { "content-type": "application/json" })
        .end('{"error":"Internal server error"}');
    }
  });
});

server.listen(Number(portArg ?? 0), "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(
    `${JSON.stringify({ port: typeof address === "object" ? address?.port : 0 })}\n`,
  );
});
process.on("SIGTERM", () => server.close(() => void sql.end().then(() => process.exit(0))));
