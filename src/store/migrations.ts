/**
 * Numbered SQL migrations, the same for both drivers, applied in order at start-up
 * and recorded in `schema_migrations`. Never edit a migration that has shipped: add
 * the next number.
 *
 * No event field is stored in plaintext: the event tables hold ids, timestamps,
 * ciphertext and blind indexes (keyed values, crypto/blind-index.ts) only.
 */
import type { Db } from "./db.js";

/** One migration. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: "projects and api keys",
    sql: `
      create table projects (
        id uuid primary key,
        name text not null,
        plan text not null check (plan in ('free', 'start', 'pro')),
        wrapped_index_key bytea not null,
        created_at timestamptz not null default now()
      );
      create table project_keys (
        project_id uuid not null references projects (id) on delete cascade,
        version int not null,
        wrapped_key bytea not null,
        created_at timestamptz not null default now(),
        primary key (project_id, version)
      );
      create table api_keys (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        environment text not null check (environment in ('test', 'live')),
        key_hash bytea not null unique,
        prefix text not null,
        status text not null default 'active' check (status in ('active', 'revoked', 'retired')),
        created_at timestamptz not null default now(),
        status_changed_at timestamptz
      );
      create index api_keys_by_project on api_keys (project_id);
    `,
  },
  {
    version: 2,
    name: "events, contexts and idempotency keys",
    sql: `
      create table events (
        project_id uuid not null,
        environment text not null,
        id uuid not null,
        occurred_at timestamptz not null,
        received_at timestamptz not null,
        key_version int not null,
        payload bytea not null,
        actor_idx bytea not null,
        entity_type_idx bytea not null,
        entity_id_idx bytea not null,
        action_idx bytea not null,
        tenant_idx bytea,
        search_idx bytea[] not null,
        primary key (project_id, environment, id)
      );
      create index events_timeline on events (project_id, environment, occurred_at desc, id desc);
      create index events_by_actor on events (project_id, environment, actor_idx, occurred_at desc);
      create index events_by_entity on events
        (project_id, environment, entity_type_idx, entity_id_idx, occurred_at desc);
      create index events_by_action on events (project_id, environment, action_idx, occurred_at desc);
      create index events_by_tenant on events (project_id, environment, tenant_idx, occurred_at desc);
      create index events_search on events using gin (search_idx);

      create table event_contexts (
        project_id uuid not null,
        environment text not null,
        event_id uuid not null,
        key_version int not null,
        ciphertext bytea not null,
        primary key (project_id, environment, event_id)
      );

      create table idempotency_keys (
        project_id uuid not null,
        environment text not null,
        key_hash bytea not null,
        body_hash bytea not null,
        event_id uuid not null,
        received_at timestamptz not null,
        expires_at timestamptz not null,
        primary key (project_id, environment, key_hash)
      );
      create index idempotency_keys_by_expiry on idempotency_keys (expires_at);
    `,
  },
  {
    // Listing pages by (occurred_at desc, id desc) within one project and environment
    // (events_timeline, from version 2). With a filter, each filter's index now ends in
    // the same order, so a filtered page is one index range read with no sort, whatever
    // the page; entityId and entityType get an index each, as either may come alone.
    version: 3,
    name: "keyset indexes for listing events",
    sql: `
      drop index if exists events_by_actor;
      drop index if exists events_by_entity;
      drop index if exists events_by_action;
      drop index if exists events_by_tenant;
      create index events_page_by_actor on events
        (project_id, environment, actor_idx, occurred_at desc, id desc);
      create index events_page_by_entity_id on events
        (project_id, environment, entity_id_idx, occurred_at desc, id desc);
      create index events_page_by_entity_type on events
        (project_id, environment, entity_type_idx, occurred_at desc, id desc);
      create index events_page_by_action on events
        (project_id, environment, action_idx, occurred_at desc, id desc);
      create index events_page_by_tenant on events
        (project_id, environment, tenant_idx, occurred_at desc, id desc)
        where tenant_idx is not null;
    `,
  },
  {
    version: 4,
    name: "monthly usage counters; legacy action index",
    sql: `
      create table usage_counters (
        project_id uuid not null references projects (id) on delete cascade,
        environment text not null check (environment in ('test', 'live')),
        month date not null,
        count int not null,
        -- How many events the last write admitted: lets one upsert both raise the count
        -- and report what it admitted (RETURNING shows only new values).
        last_added int not null default 0,
        primary key (project_id, environment, month)
      );
      -- The legacy action of events that also have an actionKey: the action filter
      -- matches either.
      alter table events add column legacy_action_idx bytea;
      create index events_page_by_legacy_action on events
        (project_id, environment, legacy_action_idx, occurred_at desc, id desc)
        where legacy_action_idx is not null;
    `,
  },
  {
    // Storage parameters of the write path, measured with bench/store-write.ts:
    // - A typical event row (payload ciphertext, ~60 search tokens, indexes) is ~2.4 KB,
    //   over the 2 KB at which PostgreSQL moves values out of line: every event cost a
    //   second row and index entry in the TOAST table, after a compression attempt that
    //   ciphertext always defeats. Rows up to 8 KB now stay whole (~15% less database CPU
    //   per event); larger events are still moved out of line.
    // - New search tokens wait in the GIN index's pending list until it is merged into
    //   the index, by the insert that finds it full: with the default 4 MB list, that
    //   insert (and every batch behind its quota counter) waited for 4 MB of tokens, those
    //   of thousands of events, to be merged, doubling the write path's p99. Smaller lists merge more often and
    //   faster: p99 70 → 30 ms at the same throughput.
    version: 5,
    name: "storage parameters of the write path",
    sql: `
      alter table events set (toast_tuple_target = 8160);
      alter index events_search set (gin_pending_list_limit = 512);
    `,
  },
  {
    // Search tokens as bigint ids (the first 8 bytes of each token's blind index) instead
    // of 16-byte bytea: the GIN search index was the largest share of the database's work
    // per event (~60 tokens each), and over bigint it costs well under half as much
    // (bench/store-write.ts). Existing rows keep their tokens, converted the same way.
    version: 6,
    name: "search tokens as bigint ids",
    sql: `
      alter table events add column search_tokens bigint[];
      update events set search_tokens = array(
        select ('x' || encode(substring(token from 1 for 8), 'hex'))::bit(64)::bigint
          from unnest(search_idx) as token);
      drop index events_search;
      alter table events drop column search_idx;
      alter table events alter column search_tokens set not null;
      create index events_search_tokens on events using gin (search_tokens)
        with (gin_pending_list_limit = 512);
    `,
  },
];

// An arbitrary constant: instances starting together migrate one at a time.
const MIGRATION_LOCK = 727_310_001;

/**
 * Applies the migrations not yet recorded, of `list` (all of them unless a test stops at
 * an earlier version); returns the versions it applied.
 */
export async function migrate(db: Db, list: readonly Migration[] = migrations): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query("select pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await tx.query(`
      create table if not exists schema_migrations (
        version int primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`);
    const rows = await tx.query<{ version: number }>("select version from schema_migrations");
    const applied = new Set(rows.map((row) => row.version));
    const done: number[] = [];
    for (const migration of list) {
      if (applied.has(migration.version)) continue;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query("insert into schema_migrations (version, name) values ($1, $2)", [
        migration.version,
        migration.name,
      ]);
      done.push(migration.version);
    }
    return done;
  });
}

// Prepared statements take one command each; our migrations hold no literal semicolons.
function splitStatements(sql: string): string[] {
  return sql
    .split(";")
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
}
