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
];
