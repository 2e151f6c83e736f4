/**
 * The stores' schemas, as ordered migrations: migration N takes a store from schema version
 * N - 1 to N, and runs in the same transaction that records the new version. Append, never edit.
 */

/** SQLite (`SqliteStore`). */
export const SQLITE_MIGRATIONS: readonly string[] = [
  `CREATE TABLE improv_agents (
     id TEXT PRIMARY KEY,
     role TEXT NOT NULL,
     version INTEGER NOT NULL,
     epoch INTEGER NOT NULL,
     first INTEGER NOT NULL,
     length INTEGER NOT NULL,
     context BLOB NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE TABLE improv_records (
     agent_id TEXT NOT NULL REFERENCES improv_agents (id) ON DELETE CASCADE,
     position INTEGER NOT NULL,
     record TEXT NOT NULL,
     PRIMARY KEY (agent_id, position)
   ) WITHOUT ROWID;`,
  `CREATE TABLE improv_programs (
     key TEXT PRIMARY KEY,
     role TEXT NOT NULL,
     method TEXT NOT NULL,
     code TEXT NOT NULL,
     uses INTEGER NOT NULL,
     failures INTEGER NOT NULL,
     failures_in_row INTEGER NOT NULL,
     kept_at TEXT NOT NULL,
     last_used TEXT
   );
   CREATE INDEX improv_programs_role ON improv_programs (role);`,
  `CREATE TABLE improv_values (
     agent_id TEXT NOT NULL,
     ref TEXT NOT NULL,
     seq INTEGER NOT NULL,
     value TEXT NOT NULL,
     bytes INTEGER NOT NULL,
     PRIMARY KEY (agent_id, ref)
   ) WITHOUT ROWID;
   CREATE INDEX improv_values_seq ON improv_values (agent_id, seq, bytes);
   CREATE INDEX improv_records_trace ON improv_records (json_extract(record, '$.trace_id'));`,
  `ALTER TABLE improv_programs ADD COLUMN why TEXT;`,
  // A call's commit touches fewer pages (docs/storage.md, "What a call costs the store"). The
  // agent's row counts the values it kept (value_seq), so keeping one reads none; and the values
  // lie in a ring of slots, value number n in slot n % count (value_count: the count the slots
  // are laid out for, 0 until the next value lays them out), so keeping one overwrites the one
  // it evicts: one row, one page, no second index. A value is found by its call id among the
  // agent's (at most its keepValues count). Slots start as the value's number, which is unique.
  `ALTER TABLE improv_agents ADD COLUMN value_seq INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE improv_agents ADD COLUMN value_count INTEGER NOT NULL DEFAULT 0;
   UPDATE improv_agents SET value_seq = COALESCE((SELECT MAX(seq) FROM improv_values WHERE agent_id = improv_agents.id), 0);
   CREATE TABLE improv_value_slots (
     agent_id TEXT NOT NULL,
     slot INTEGER NOT NULL,
     seq INTEGER NOT NULL,
     ref TEXT NOT NULL,
     bytes INTEGER NOT NULL,
     value TEXT NOT NULL,
     PRIMARY KEY (agent_id, slot)
   ) WITHOUT ROWID;
   INSERT INTO improv_value_slots (agent_id, slot, seq, ref, bytes, value) SELECT agent_id, seq, seq, ref, bytes, value FROM improv_values;
   DROP TABLE improv_values;
   ALTER TABLE improv_value_slots RENAME TO improv_values;`,
  // Processes take turns per agent (docs/storage.md, "Several processes on one agent"): a call
  // that met a conflict takes its agent's lease, a random owner token and an expiry (ms since the
  // epoch) on the agent's row, renewed while its run lasts and released by its commit, so a dead
  // process's lease lapses. No lease: owner NULL.
  `ALTER TABLE improv_agents ADD COLUMN lease_owner TEXT;
   ALTER TABLE improv_agents ADD COLUMN lease_expires INTEGER NOT NULL DEFAULT 0;`,
];

/** PostgreSQL (`PostgresStore`). */
export const POSTGRES_MIGRATIONS: readonly string[] = [
  `CREATE TABLE improv_agents (
     id TEXT PRIMARY KEY,
     role TEXT NOT NULL,
     version BIGINT NOT NULL,
     epoch BIGINT NOT NULL,
     first BIGINT NOT NULL,
     length BIGINT NOT NULL,
     context BYTEA NOT NULL,
     created_at TIMESTAMPTZ NOT NULL,
     updated_at TIMESTAMPTZ NOT NULL
   );
   CREATE TABLE improv_records (
     agent_id TEXT NOT NULL REFERENCES improv_agents (id) ON DELETE CASCADE,
     position BIGINT NOT NULL,
     record TEXT NOT NULL,
     PRIMARY KEY (agent_id, position)
   );`,
  `CREATE TABLE improv_programs (
     key TEXT PRIMARY KEY,
     role TEXT NOT NULL,
     method TEXT NOT NULL,
     code TEXT NOT NULL,
     uses BIGINT NOT NULL,
     failures BIGINT NOT NULL,
     failures_in_row BIGINT NOT NULL,
     kept_at TIMESTAMPTZ NOT NULL,
     last_used TIMESTAMPTZ
   );
   CREATE INDEX improv_programs_role ON improv_programs (role);`,
  `CREATE TABLE improv_values (
     agent_id TEXT NOT NULL,
     ref TEXT NOT NULL,
     seq BIGINT NOT NULL,
     value TEXT NOT NULL,
     bytes BIGINT NOT NULL,
     PRIMARY KEY (agent_id, ref)
   );
   CREATE INDEX improv_values_seq ON improv_values (agent_id, seq, bytes);
   CREATE INDEX improv_records_trace ON improv_records (((record::jsonb) ->> 'trace_id'));`,
  `ALTER TABLE improv_programs ADD COLUMN why TEXT;`,
  // One call's commit in one statement (see docs/storage.md): the version check, the record,
  // the kept value and its bounds, the context, the kept program's count, and the release of
  // the agent's advisory lock when the caller holds it.
  `CREATE FUNCTION improv_commit(
     p_agent TEXT, p_base BIGINT, p_record TEXT, p_context BYTEA,
     p_value_ref TEXT, p_value TEXT, p_value_bytes BIGINT, p_value_count BIGINT, p_value_max_bytes BIGINT, p_byte_check_every BIGINT,
     p_program_key TEXT, p_program_code TEXT, p_unlock BOOLEAN,
     OUT r_ok BOOLEAN, OUT r_version BIGINT, OUT r_epoch BIGINT, OUT r_length BIGINT, OUT r_position BIGINT)
   LANGUAGE plpgsql AS $$
   DECLARE
     v_first BIGINT;
     v_seq BIGINT;
   BEGIN
     SELECT version, epoch, first, length INTO r_version, r_epoch, v_first, r_length FROM improv_agents WHERE id = p_agent FOR UPDATE;
     IF NOT FOUND THEN
       RAISE EXCEPTION USING ERRCODE = 'no_data_found', MESSAGE = format('agent "%s" is not in the store (it was forgotten); open it again.', p_agent);
     END IF;
     IF p_context IS NOT NULL AND p_base IS NOT NULL AND r_version <> p_base THEN
       r_ok := false;
       RETURN;
     END IF;
     IF p_record IS NOT NULL THEN
       r_position := v_first + r_length;
       INSERT INTO improv_records (agent_id, position, record) VALUES (p_agent, r_position, p_record);
       r_length := r_length + 1;
       IF p_value_ref IS NOT NULL THEN
         INSERT INTO improv_values (agent_id, ref, seq, value, bytes)
           SELECT p_agent, p_value_ref, COALESCE(MAX(seq), 0) + 1, p_value, p_value_bytes FROM improv_values WHERE agent_id = p_agent
           RETURNING seq INTO v_seq;
         IF v_seq > p_value_count THEN
           DELETE FROM improv_values WHERE agent_id = p_agent AND seq <= v_seq - p_value_count;
         END IF;
         IF (p_value_bytes * p_value_count > p_value_max_bytes OR v_seq % p_byte_check_every = 0)
            AND (SELECT COALESCE(SUM(bytes), 0) FROM improv_values WHERE agent_id = p_agent) > p_value_max_bytes THEN
           DELETE FROM improv_values WHERE agent_id = p_agent AND ref IN (
             SELECT ref FROM (
               SELECT ref, ROW_NUMBER() OVER (ORDER BY seq DESC) AS n, SUM(bytes) OVER (ORDER BY seq DESC) AS total
               FROM improv_values WHERE agent_id = p_agent
             ) AS ranked WHERE n > p_value_count OR total > p_value_max_bytes);
         END IF;
       END IF;
     END IF;
     IF p_context IS NOT NULL THEN
       r_version := r_version + 1;
       UPDATE improv_agents SET context = p_context, version = r_version, length = r_length, updated_at = now() WHERE id = p_agent;
     ELSE
       UPDATE improv_agents SET length = r_length, updated_at = now() WHERE id = p_agent;
     END IF;
     IF p_program_key IS NOT NULL THEN
       UPDATE improv_programs SET uses = uses + 1, failures_in_row = 0, last_used = now() WHERE key = p_program_key AND code = p_program_code;
     END IF;
     IF p_unlock THEN
       PERFORM pg_advisory_unlock(hashtextextended(p_agent, 0));
     END IF;
     r_ok := true;
   END
   $$;`,
  // A cheaper commit (docs/storage.md, "What a call costs the store"). The agent's row counts its
  // kept values (value_seq), so keeping one reads none; the version check, the new version and
  // length and that count are one UPDATE … RETURNING, not a locking SELECT and an UPDATE. Values
  // lie in a ring of slots as in SQLite's migration 5 (value number n in slot n % value_count),
  // so keeping one overwrites the one it evicts, with no second index (a value is found by its
  // call id among the agent's, at most its keepValues count). The trace index reads the record as
  // json, not jsonb (no binary copy built per record). And a record is no longer checked against
  // its agent by a foreign key (every writer appends under the agent's row lock, so it exists),
  // whose check cost each commit a query: a trigger deletes an agent's records with it, as the
  // key's cascade did.
  `ALTER TABLE improv_agents ADD COLUMN value_seq BIGINT NOT NULL DEFAULT 0;
   ALTER TABLE improv_agents ADD COLUMN value_count BIGINT NOT NULL DEFAULT 0;
   UPDATE improv_agents a SET value_seq = m.seq FROM (SELECT agent_id, MAX(seq) AS seq FROM improv_values GROUP BY agent_id) AS m WHERE m.agent_id = a.id;
   DROP INDEX improv_values_seq;
   ALTER TABLE improv_values ADD COLUMN slot BIGINT;
   UPDATE improv_values SET slot = seq;
   ALTER TABLE improv_values ALTER COLUMN slot SET NOT NULL;
   ALTER TABLE improv_values DROP CONSTRAINT improv_values_pkey;
   ALTER TABLE improv_values ADD PRIMARY KEY (agent_id, slot);
   DROP INDEX improv_records_trace;
   CREATE INDEX improv_records_trace ON improv_records (((record::json) ->> 'trace_id'));
   ALTER TABLE improv_records DROP CONSTRAINT IF EXISTS improv_records_agent_id_fkey;
   CREATE FUNCTION improv_forget_records() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     DELETE FROM improv_records WHERE agent_id = OLD.id;
     RETURN NULL;
   END
   $$;
   CREATE TRIGGER improv_agents_forget_records AFTER DELETE ON improv_agents FOR EACH ROW EXECUTE FUNCTION improv_forget_records();
   CREATE OR REPLACE FUNCTION improv_commit(
     p_agent TEXT, p_base BIGINT, p_record TEXT, p_context BYTEA,
     p_value_ref TEXT, p_value TEXT, p_value_bytes BIGINT, p_value_count BIGINT, p_value_max_bytes BIGINT, p_byte_check_every BIGINT,
     p_program_key TEXT, p_program_code TEXT, p_unlock BOOLEAN,
     OUT r_ok BOOLEAN, OUT r_version BIGINT, OUT r_epoch BIGINT, OUT r_length BIGINT, OUT r_position BIGINT)
   LANGUAGE plpgsql AS $$
   DECLARE
     v_keep BOOLEAN := COALESCE(p_record IS NOT NULL AND p_value_ref IS NOT NULL AND p_value_count > 0, false);
     v_seq BIGINT;
     v_laid_out BIGINT;
     v_unlocked BOOLEAN;
   BEGIN
     -- Refused (no row) when the context changed since p_base; the row stays locked to the commit.
     UPDATE improv_agents
        SET version = version + (p_context IS NOT NULL)::int,
            context = COALESCE(p_context, context),
            length = length + (p_record IS NOT NULL)::int,
            value_seq = value_seq + v_keep::int,
            updated_at = now()
      WHERE id = p_agent AND (p_context IS NULL OR p_base IS NULL OR version = p_base)
      RETURNING version, epoch, length, first + length - 1, value_seq, value_count INTO r_version, r_epoch, r_length, r_position, v_seq, v_laid_out;
     IF NOT FOUND THEN
       SELECT version INTO r_version FROM improv_agents WHERE id = p_agent;
       IF NOT FOUND THEN
         RAISE EXCEPTION USING ERRCODE = 'no_data_found', MESSAGE = format('agent "%s" is not in the store (it was forgotten); open it again.', p_agent);
       END IF;
       r_ok := false;
       r_position := NULL;
       RETURN;
     END IF;
     IF p_record IS NULL THEN
       r_position := NULL;
     ELSE
       INSERT INTO improv_records (agent_id, position, record) VALUES (p_agent, r_position, p_record);
     END IF;
     IF v_keep THEN
       IF v_laid_out <> p_value_count THEN
         -- Laid out for another count: only the values that stay (the latest count, with this one)
         -- keep a slot, numbers within the count of each other, so their slots differ.
         DELETE FROM improv_values WHERE agent_id = p_agent AND seq <= v_seq - p_value_count;
         UPDATE improv_values SET slot = -1 - seq WHERE agent_id = p_agent;
         UPDATE improv_values SET slot = seq % p_value_count WHERE agent_id = p_agent;
         UPDATE improv_agents SET value_count = p_value_count WHERE id = p_agent;
       END IF;
       INSERT INTO improv_values (agent_id, slot, seq, ref, value, bytes) VALUES (p_agent, v_seq % p_value_count, v_seq, p_value_ref, p_value, p_value_bytes)
         ON CONFLICT (agent_id, slot) DO UPDATE SET seq = excluded.seq, ref = excluded.ref, value = excluded.value, bytes = excluded.bytes;
       -- Two tests: the first is a plain expression, which PL/pgSQL evaluates without a query.
       IF p_value_bytes * p_value_count > p_value_max_bytes OR v_seq % p_byte_check_every = 0 THEN
         IF (SELECT COALESCE(SUM(bytes), 0) FROM improv_values WHERE agent_id = p_agent) > p_value_max_bytes THEN
           DELETE FROM improv_values WHERE agent_id = p_agent AND seq <= (
             SELECT MAX(seq) FROM (
               SELECT seq, ROW_NUMBER() OVER (ORDER BY seq DESC) AS n, SUM(bytes) OVER (ORDER BY seq DESC) AS total
               FROM improv_values WHERE agent_id = p_agent
             ) AS ranked WHERE n > p_value_count OR total > p_value_max_bytes);
         END IF;
       END IF;
     END IF;
     IF p_program_key IS NOT NULL THEN
       UPDATE improv_programs SET uses = uses + 1, failures_in_row = 0, last_used = now() WHERE key = p_program_key AND code = p_program_code;
     END IF;
     IF p_unlock THEN
       -- An assignment, not PERFORM: a plain expression, evaluated without a query.
       v_unlocked := pg_advisory_unlock(hashtextextended(p_agent, 0));
     END IF;
     r_ok := true;
   END
   $$;`,
];
