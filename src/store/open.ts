import { PostgresStore } from "./postgres-store.ts";
import { SqliteStore } from "./sqlite-store.ts";
import { refuseOtherUrls, type Store } from "./store.ts";

/** Stores opened from strings, one per location per process, so agents opened by name share a connection. */
const opened = new Map<string, Store>();

/**
 * The store a `store` option string names: a `postgres://` or `postgresql://` URL opens a
 * `PostgresStore`; anything else (a file path, a `sqlite:` or `file:` URL) a `SqliteStore`.
 */
export function openStore(location: string): Store {
  const key = location.trim();
  if (key === "") throw new TypeError('Option "store" must not be blank: give a file path, a sqlite: URL or a postgres:// URL.');
  refuseOtherUrls(key);
  let store = opened.get(key);
  if (store === undefined || (store as { closed?: boolean }).closed === true) {
    store = /^postgres(ql)?:\/\//i.test(key) ? new PostgresStore(key) : new SqliteStore(key);
    opened.set(key, store);
  }
  return store;
}
