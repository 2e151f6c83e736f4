/**
 * The names an agent keeps for itself. Every other string property of an agent is a
 * dynamic method (or, once the application writes it, a value). Symbol keys are reserved
 * too. Generated code cannot call these through `delegate` either.
 *
 * | name             | on an agent                                                  |
 * |------------------|--------------------------------------------------------------|
 * | `remember`       | `remember(entries)` writes context entries, returns the agent |
 * | `runtimeContext` | the live, mutable context object                              |
 * | `delegate`       | `delegate(role, options?)` returns a child agent              |
 * | `then`           | always `undefined`, so an agent is never taken for a promise  |
 * | `toJSON`         | `{ role }`, so `JSON.stringify(agent)` makes no call          |
 * | `toString`       | `"[Agent role]"`                                              |
 * | `constructor`    | `Agent`                                                       |
 */
export const RESERVED_NAMES: ReadonlySet<string> = new Set([
  "remember",
  "runtimeContext",
  "delegate",
  "then",
  "toJSON",
  "toString",
  "constructor",
]);

/** Longest method or role name accepted. */
export const MAX_NAME_LENGTH = 200;
