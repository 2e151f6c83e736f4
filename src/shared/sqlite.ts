/** What every user of a `node:sqlite` database here does alike. */
import type { DatabaseSync } from "node:sqlite";

/** Runs `work` in a read transaction of `db`, so everything it reads comes from one snapshot. */
export function readSnapshot<T>(db: DatabaseSync, work: () => T): T {
  db.exec("BEGIN");
  try {
    return work();
  } finally {
    if (db.isTransaction) db.exec("COMMIT");
  }
}
