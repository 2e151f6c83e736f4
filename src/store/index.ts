/** What other folders may use of store/: they import it from here, never from its files. */
export { DurableLink, forgetOpened, openedAgent, rememberOpened } from "./durable.ts";
export type { ValueChange } from "./durable.ts";
export { openStore } from "./open.ts";
export { PostgresStore } from "./postgres-store.ts";
export type { PostgresStoreOptions } from "./postgres-store.ts";
export { SqliteStore, sqlitePath } from "./sqlite-store.ts";
export type { SqliteStoreOptions } from "./sqlite-store.ts";
export { RoleMismatchError, StoreError, beginStoreCall, childId, endStoreCall, isStore, isSyncStore, keepsPrograms, storeClosed } from "./store.ts";
export type { AgentChanges, AgentSummary, AgentTurn, AgentView, AgentWrite, KeptProgram, ProgramStore, ProgramToKeep, PruneOptions, Store, StoredContext, SyncStore, WriteResult } from "./store.ts";
