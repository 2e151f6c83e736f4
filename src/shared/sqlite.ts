/** What every user of a `node:sqlite` database here does alike. */
import type { DatabaseSync } from "node:sqlite";

/**
 * `node:sqlite`'s `DatabaseSync`, loaded when a database is first opened: a static import would
 * fail the whole package on a Node.js without it before improv could say which Node it needs.
 */
export function sqliteDatabase(): typeof DatabaseSync {
  const sqlite = process.getBuiltinModule("node:sqlite");
  if (sqlite === undefined) throw new Error(`improv's SQLite store and retriever need node:sqlite, which Node.js ${process.versions.node} lacks: use Node.js 24 or later.`);
  return sqlite.DatabaseSync;
}

/** Runs `work` in a read transaction of `db`, so everything it reads comes from one snapshot. */
export function readSnapshot<T>(db: DatabaseSync, work: () => T): T {
  db.exec("BEGIN");
  try {
    return work();
  } finally {
    if (db.isTransaction) db.exec("COMMIT");
  }
}
