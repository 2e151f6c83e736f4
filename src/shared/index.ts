/** What other folders may use of shared/: they import it from here, never from its files. */
export { causesOf, errorCode, innermostError } from "./causes.ts";
export { loadOpenAI, postgresLabel } from "./clients.ts";
export { Drain, closeTimeout } from "./drain.ts";
export { ENV_VARIABLES, apiKeyFrom, readEnv, readEnvFlag } from "./env.ts";
export type { EnvName } from "./env.ts";
export { asJsonSafe, describeError, isPlainJson, toJsonSafe, truncateString, valueClass } from "./json-safe.ts";
export type { JsonValue } from "./json-safe.ts";
export { checkOptionNames, describeType, unknownNameMessage } from "./option-check.ts";
export { ERROR_TYPES, ImprovError, Outcome, isRetriable } from "./outcome.ts";
export type { ErrorType, FailedOutcome, OkOutcome, OutcomeFields, OutcomeStatus } from "./outcome.ts";
export { MAX_NAME_LENGTH, RESERVED_NAMES } from "./reserved-names.ts";
export { safeMessage } from "./safe-message.ts";
export { readSnapshot, sqliteDatabase } from "./sqlite.ts";
export { Slots } from "./slots.ts";
export { terminalText } from "./terminal-text.ts";
export { within, type Within } from "./within.ts";
