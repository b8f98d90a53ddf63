/**
 * Numbered SQL migrations, the same for both drivers, applied in order at start-up
 * and recorded in `schema_migrations`. Never edit a migration that has shipped: add
 * the next number.
 *
 * No event field is stored in plaintext: the event tables hold ids, timestamps,
 * ciphertext and blind indexes (keyed values, crypto/blind-index.ts) only. Since
 * version 7 `events` is the journal and `event_index` what is derived from it
 * (docs/write-path.md).
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
  {
    // The journal (docs/write-path.md). `events` becomes each log's journal: one row per
    // acknowledged event, written once by the acknowledgement (ids, timestamps, the sealed
    // payload with its salt) and stamped with the id of the transaction that wrote it.
    // Everything derivable moves to `event_index`, written behind the journal by the
    // integrator, which gives each event its gapless `log_index`. `event_logs` holds
    // each log's integrated position: every journal row at or before (integrated_xid,
    // integrated_id) has its index row, and `size` of them exist.
    // Existing events are integrated here, numbered in receivedAt order (ties by id).
    version: 7,
    name: "journal, event index and logs",
    sql: `
      create table event_logs (
        -- Key of the log's advisory lock: one integrator at a time.
        lock_id int generated always as identity unique,
        project_id uuid not null references projects (id) on delete cascade,
        environment text not null check (environment in ('test', 'live')),
        size bigint not null default 0,
        integrated_xid xid8 not null default '0',
        integrated_id uuid not null default '00000000-0000-0000-0000-000000000000',
        integrated_at timestamptz,
        primary key (project_id, environment)
      );
      -- A project's two logs are made with it, never on the acknowledgement path (an
      -- upsert there would serialise the appends of a log).
      create function create_event_logs() returns trigger language plpgsql as $$
      begin
        insert into event_logs (project_id, environment)
        values (new.id, 'test'), (new.id, 'live');
        return new;
      end
      $$;
      create trigger projects_event_logs after insert on projects
        for each row execute function create_event_logs();
      insert into event_logs (project_id, environment)
        select p.id, e.environment
          from projects p cross join (values ('test'), ('live')) as e(environment)
         order by p.created_at, p.id, e.environment;

      alter table events add column xid xid8 not null default pg_current_xact_id();

      create table event_index (
        project_id uuid not null,
        environment text not null,
        log_index bigint not null,
        id uuid not null,
        -- With (project_id, environment, id): the journal row's key.
        xid xid8 not null,
        occurred_at timestamptz not null,
        actor_idx bytea not null,
        entity_type_idx bytea not null,
        entity_id_idx bytea not null,
        action_idx bytea not null,
        legacy_action_idx bytea,
        tenant_idx bytea,
        search_tokens bigint[] not null,
        primary key (project_id, environment, log_index)
      );
      insert into event_index (project_id, environment, log_index, id, xid, occurred_at,
                               actor_idx, entity_type_idx, entity_id_idx, action_idx,
                               legacy_action_idx, tenant_idx, search_tokens)
        select project_id, environment,
               row_number() over (partition by project_id, environment
                                  order by received_at, id) - 1,
               id, xid, occurred_at, actor_idx, entity_type_idx, entity_id_idx, action_idx,
               legacy_action_idx, tenant_idx, search_tokens
          from events;
      update event_logs l set size = c.n
        from (select project_id, environment, count(*) as n
                from events group by project_id, environment) as c
       where c.project_id = l.project_id and c.environment = l.environment;
      -- Everything this transaction wrote is integrated.
      update event_logs
         set integrated_xid = pg_current_xact_id(),
             integrated_id = 'ffffffff-ffff-ffff-ffff-ffffffffffff',
             integrated_at = now();

      create index event_index_timeline on event_index
        (project_id, environment, occurred_at desc, id desc);
      create index event_index_by_actor on event_index
        (project_id, environment, actor_idx, occurred_at desc, id desc);
      create index event_index_by_entity_id on event_index
        (project_id, environment, entity_id_idx, occurred_at desc, id desc);
      create index event_index_by_entity_type on event_index
        (project_id, environment, entity_type_idx, occurred_at desc, id desc);
      create index event_index_by_action on event_index
        (project_id, environment, action_idx, occurred_at desc, id desc);
      create index event_index_by_legacy_action on event_index
        (project_id, environment, legacy_action_idx, occurred_at desc, id desc)
        where legacy_action_idx is not null;
      create index event_index_by_tenant on event_index
        (project_id, environment, tenant_idx, occurred_at desc, id desc)
        where tenant_idx is not null;
      -- The integrator writes thousands of rows a transaction, so the default pending list
      -- (4 MB) is merged by it, behind the journal, not by a request.
      create index event_index_search on event_index using gin (search_tokens);

      drop index events_timeline;
      drop index events_page_by_actor;
      drop index events_page_by_entity_id;
      drop index events_page_by_entity_type;
      drop index events_page_by_action;
      drop index events_page_by_legacy_action;
      drop index events_page_by_tenant;
      drop index events_search_tokens;
      alter table events drop column actor_idx, drop column entity_type_idx,
        drop column entity_id_idx, drop column action_idx, drop column legacy_action_idx,
        drop column tenant_idx, drop column search_tokens;
      -- One index on the journal: the integrator reads a log in (xid, id) order, a reader
      -- finds a log's head at its end, and an index row finds its event by the whole key.
      alter table events drop constraint events_pkey;
      alter table events add primary key (project_id, environment, xid, id);
    `,
  },
  {
    // The verifiable log (docs/verifiable-log.md, src/verifiable-log/tree-store.ts): each
    // log's Merkle tree as tiles of 256 hashes (level >= 0) or 256 leaves (level -1), its
    // size, and every signed checkpoint, kept.
    version: 8,
    name: "verifiable log: tree tiles and checkpoints",
    sql: `
      create table log_trees (
        project_id uuid not null,
        environment text not null,
        size bigint not null,
        primary key (project_id, environment)
      );
      create table log_tiles (
        project_id uuid not null,
        environment text not null,
        level smallint not null,
        n bigint not null,
        data bytea not null,
        primary key (project_id, environment, level, n)
      );
      create table log_checkpoints (
        project_id uuid not null,
        environment text not null,
        size bigint not null,
        root bytea not null,
        note text not null,
        published_at timestamptz not null default now(),
        primary key (project_id, environment, size)
      );
      -- An inclusion proof finds its event's position by id.
      create index event_index_by_id on event_index (project_id, environment, id);
      `,
  },
  {
    // The Idempotency-Keys of bulk requests (store/batch-append.ts): one claim covers a
    // whole batch, and answers a replay with each item's event id (null for an item that
    // was refused), in request order. Apart from single events' keys: the two are
    // unrelated.
    version: 9,
    name: "batch idempotency keys",
    sql: `
      create table batch_idempotency_keys (
        project_id uuid not null,
        environment text not null,
        key_hash bytea not null,
        body_hash bytea not null,
        event_ids uuid[] not null,
        received_at timestamptz not null,
        expires_at timestamptz not null,
        primary key (project_id, environment, key_hash)
      );
      create index batch_idempotency_keys_by_expiry on batch_idempotency_keys (expires_at);
    `,
  },
  {
    // Erasure and its tombstones (docs/lifecycle.md, store/erasure-store.ts). An erased
    // event loses every row that held or was derived from its content (its journal row in
    // `events` with the ciphertext and salt, its `event_contexts` row, its `event_index`
    // row with the blind indexes and search tokens) and keeps, in `event_tombstones`, what
    // its leaf already shows: its log index, id and receivedAt, with when it was erased.
    // The tree's tiles are untouched: leaves never held content. `erasures` records each
    // erasure request (who, when, selector, counts) apart from the events it erases; its
    // actor or tenant selector is kept only as the blind index it matches with and sealed
    // under the project's data key, never in plaintext.
    version: 10,
    name: "erasure: tombstones and erasure records",
    sql: `
      create table event_tombstones (
        project_id uuid not null,
        environment text not null,
        log_index bigint not null,
        id uuid not null,
        received_at timestamptz not null,
        erased_at timestamptz not null,
        -- The erasure record that made it (null when retention expired it).
        erasure_id uuid,
        primary key (project_id, environment, log_index)
      );
      -- An inclusion proof, or an erasure by ids, finds a tombstone by its event id.
      create index event_tombstones_by_id on event_tombstones (project_id, environment, id);

      create table erasures (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        environment text not null check (environment in ('test', 'live')),
        selector text not null check (selector in ('event_ids', 'actor_id', 'tenant_id', 'retention')),
        -- selector 'event_ids': the ids asked for.
        event_ids uuid[],
        -- selector 'actor_id' / 'tenant_id': the value's blind index (what event_index
        -- holds), and the value sealed under the project's data key (to show it back).
        match_idx bytea,
        sealed_value bytea,
        key_version int,
        -- selector 'retention': events received before this instant.
        received_before timestamptz,
        requested_by text not null,
        requested_at timestamptz not null default now(),
        -- The journal's head when the request was recorded: only events at or before it
        -- in (xid, id) order (acknowledged before the call) are erased, even on resume.
        bound_xid xid8 not null,
        bound_id uuid not null,
        status text not null default 'pending' check (status in ('pending', 'done')),
        -- Null until counted (after the log is integrated up to the bound).
        matched bigint,
        erased bigint not null default 0,
        completed_at timestamptz
      );
      create index erasures_by_project on erasures (project_id, requested_at desc);
      create index erasures_pending on erasures (requested_at) where status = 'pending';
    `,
  },
  {
    // How long each log keeps its events (docs/lifecycle.md, "Retention"): a row per log
    // whose retention was set; none means 0, kept for ever.
    version: 11,
    name: "retention per log",
    sql: `
      create table log_retention (
        project_id uuid not null references projects (id) on delete cascade,
        environment text not null check (environment in ('test', 'live')),
        retention_days int not null check (retention_days between 0 and 36500),
        changed_at timestamptz not null default now(),
        primary key (project_id, environment)
      );
    `,
  },
  {
    // Time-partitioned content (docs/lifecycle.md, "Partitioned storage"). The three tables
    // that hold content or values derived from it (`events`, `event_contexts`,
    // `event_index`) are partitioned first by LIST on `retention_days`, the log's period
    // stamped on each row when it is acknowledged (0, kept for ever, in a partition never
    // dropped), then by RANGE on `received_at`, one partition per UTC day: every row of a
    // (period, day) partition expires on the same day, so retention drops it whole
    // (store/retention-partitions.ts) instead of deleting its rows. Rows no partition
    // takes (a period or day not created yet) go to a DEFAULT partition and expire by the
    // batched path: an insert never fails for want of a partition.
    // `audit_content_partitions(days, first, last)` creates a period's partitions and its
    // days from `first` to `last` (both UTC dates) where missing; a day whose rows already
    // went to the period's default partition is left there. Existing rows are copied in,
    // stamped with their log's period now.
    version: 12,
    name: "time-partitioned content",
    sql: `
      create function audit_content_partitions(p_days int, p_first date, p_last date)
        returns int language plpgsql as $$
      declare
        t text;
        d date;
        parent text;
        part text;
        lo timestamptz;
        hi timestamptz;
        taken boolean;
        made int := 0;
      begin
        if p_days <= 0 then
          return 0;
        end if;
        -- Instances creating partitions at once take turns.
        perform pg_advisory_xact_lock(727310026);
        foreach t in array array['events', 'event_contexts', 'event_index'] loop
          parent := t || '_r' || p_days;
          if to_regclass(parent) is null then
            execute format('select exists (select 1 from %I where retention_days = %s)',
                           t || '_rdefault', p_days) into taken;
            if taken then
              -- Rows of this period went to the default partition: they stay there (and
              -- expire by the batched path); the period is left unpartitioned.
              raise notice 'period % has rows in %_rdefault: not partitioned', p_days, t;
              continue;
            end if;
            execute format('create table %I partition of %I for values in (%s)'
                           ' partition by range (received_at)', parent, t, p_days);
            execute format('create table %I partition of %I default%s', parent || '_default',
                           parent, case when t = 'events'
                                        then ' with (toast_tuple_target = 8160)' else '' end);
            made := made + 1;
          end if;
          for d in select generate_series(p_first, p_last, interval '1 day')::date loop
            part := parent || '_' || to_char(d, 'YYYYMMDD');
            continue when to_regclass(part) is not null;
            lo := d::timestamp at time zone 'UTC';
            hi := (d + 1)::timestamp at time zone 'UTC';
            execute format('select exists (select 1 from %I where received_at >= $1'
                           ' and received_at < $2)', parent || '_default')
              into taken using lo, hi;
            continue when taken;
            execute format('create table %I partition of %I for values from (%L) to (%L)%s',
                           part, parent, lo, hi,
                           case when t = 'events'
                                then ' with (toast_tuple_target = 8160)' else '' end);
            made := made + 1;
          end loop;
        end loop;
        return made;
      end
      $$;

      alter table events rename to events_v11;
      alter table events_v11 rename constraint events_pkey to events_v11_pkey;
      alter table event_contexts rename to event_contexts_v11;
      alter table event_contexts_v11 rename constraint event_contexts_pkey
        to event_contexts_v11_pkey;
      alter table event_index rename to event_index_v11;
      alter table event_index_v11 rename constraint event_index_pkey to event_index_v11_pkey;
      drop index event_index_timeline;
      drop index event_index_by_actor;
      drop index event_index_by_entity_id;
      drop index event_index_by_entity_type;
      drop index event_index_by_action;
      drop index event_index_by_legacy_action;
      drop index event_index_by_tenant;
      drop index event_index_search;
      drop index event_index_by_id;

      create table events (like events_v11 including defaults,
                           retention_days int not null default 0)
        partition by list (retention_days);
      create table event_contexts (like event_contexts_v11,
                                   received_at timestamptz not null,
                                   retention_days int not null default 0)
        partition by list (retention_days);
      create table event_index (like event_index_v11,
                                received_at timestamptz not null,
                                retention_days int not null default 0)
        partition by list (retention_days);
      create table events_r0 partition of events for values in (0)
        with (toast_tuple_target = 8160);
      create table events_rdefault partition of events default with (toast_tuple_target = 8160);
      create table event_contexts_r0 partition of event_contexts for values in (0);
      create table event_contexts_rdefault partition of event_contexts default;
      create table event_index_r0 partition of event_index for values in (0);
      create table event_index_rdefault partition of event_index default;
      -- Each period in use gets its days from its oldest row still within the period (older
      -- rows go to its default partition and expire at the next run) to three days ahead.
      select audit_content_partitions(p.days,
               (greatest(coalesce(p.oldest, now()), now() - (p.days + 1) * interval '1 day')
                  at time zone 'UTC')::date,
               (now() at time zone 'UTC')::date + 3)
        from (select r.retention_days as days,
                     (select min(e.received_at) from events_v11 e
                        join log_retention x on x.project_id = e.project_id
                                            and x.environment = e.environment
                       where x.retention_days = r.retention_days) as oldest
                from (select distinct retention_days from log_retention
                       where retention_days > 0) as r) as p;

      insert into events
        select e.*, coalesce(r.retention_days, 0) from events_v11 e
          left join log_retention r on r.project_id = e.project_id
                                   and r.environment = e.environment;
      insert into event_contexts
        select c.*, e.received_at, e.retention_days from event_contexts_v11 c
          join events e on e.project_id = c.project_id and e.environment = c.environment
                       and e.id = c.event_id;
      insert into event_index
        select i.*, e.received_at, e.retention_days from event_index_v11 i
          join events e on e.project_id = i.project_id and e.environment = i.environment
                       and e.xid = i.xid and e.id = i.id;
      drop table events_v11;
      drop table event_contexts_v11;
      drop table event_index_v11;

      -- A partitioned table's keys hold its partition keys: the uniqueness of a log index
      -- across partitions rests on the integrator's one pass per log (its advisory lock).
      alter table events add primary key
        (project_id, environment, xid, id, retention_days, received_at);
      alter table event_contexts add primary key
        (project_id, environment, event_id, retention_days, received_at);
      alter table event_index add primary key
        (project_id, environment, log_index, retention_days, received_at);
      create index event_index_timeline on event_index
        (project_id, environment, occurred_at desc, id desc);
      create index event_index_by_actor on event_index
        (project_id, environment, actor_idx, occurred_at desc, id desc);
      create index event_index_by_entity_id on event_index
        (project_id, environment, entity_id_idx, occurred_at desc, id desc);
      create index event_index_by_entity_type on event_index
        (project_id, environment, entity_type_idx, occurred_at desc, id desc);
      create index event_index_by_action on event_index
        (project_id, environment, action_idx, occurred_at desc, id desc);
      create index event_index_by_legacy_action on event_index
        (project_id, environment, legacy_action_idx, occurred_at desc, id desc)
        where legacy_action_idx is not null;
      create index event_index_by_tenant on event_index
        (project_id, environment, tenant_idx, occurred_at desc, id desc)
        where tenant_idx is not null;
      create index event_index_search on event_index using gin (search_tokens);
      create index event_index_by_id on event_index (project_id, environment, id);
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

// Prepared statements take one command each. Our migrations hold no literal semicolons
// outside function bodies, which are dollar-quoted (`$$ ... $$`) and kept whole.
function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = "";
  for (const [i, part] of sql.split("$$").entries()) {
    if (i % 2 === 1) {
      current += `$$${part}$$`;
      continue;
    }
    const pieces = part.split(";");
    current += pieces.shift() ?? "";
    for (const piece of pieces) {
      statements.push(current);
      current = piece;
    }
  }
  statements.push(current);
  return statements.map((statement) => statement.trim()).filter((s) => s.length > 0);
}
