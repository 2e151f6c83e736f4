import type { KeptProgram } from "./store.ts";

/** A row of `improv_programs`, as SQLite and PostgreSQL return it. */
export interface ProgramRow {
  readonly key: string;
  readonly role: string;
  readonly method: string;
  readonly code: string;
  readonly uses: number | string;
  readonly failures: number | string;
  readonly failures_in_row: number | string;
  readonly kept_at: string | Date;
  readonly last_used: string | Date | null;
  /** Absent in stores from before schema version 4 until migrated; null for programs kept then. */
  readonly why?: string | null;
}

/** A kept program from its row (SQLite and PostgreSQL rows alike). */
export function keptProgram(row: ProgramRow): KeptProgram {
  const time = (value: string | Date) => (value instanceof Date ? value.toISOString() : value);
  return {
    key: row.key,
    role: row.role,
    method: row.method,
    code: row.code,
    uses: Number(row.uses),
    failures: Number(row.failures),
    failuresInRow: Number(row.failures_in_row),
    why: row.why ?? null,
    keptAt: time(row.kept_at),
    lastUsed: row.last_used === null ? null : time(row.last_used),
  };
}


