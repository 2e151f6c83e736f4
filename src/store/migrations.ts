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
];
