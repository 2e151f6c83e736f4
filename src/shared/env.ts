/** Environment variables, read in one place: trimmed, and blank counts as unset. */

/** The environment variables improv reads, each with what it is for (`improv --help` lists them). */
export const ENV_VARIABLES = {
  OPENAI_API_KEY: "key of OpenAIProvider; when set, the default provider (and the demo runs live)",
  OPENAI_BASE_URL: "server of OpenAIProvider (any OpenAI-compatible API); default OpenAI's",
  ANTHROPIC_API_KEY: "key of AnthropicProvider; the default provider when OPENAI_API_KEY is unset",
  ANTHROPIC_BASE_URL: "server of AnthropicProvider; default Anthropic's",
  IMPROV_MODEL: "model of the provider the environment chooses (default gpt-4.1-mini for OpenAI, claude-sonnet-5-5 for Anthropic)",
  IMPROV_LOG: "call log file when the log option is absent",
  IMPROV_DEBUG: "debug when the option is absent (1/0)",
  IMPROV_VERBOSE: "verbose when the option is absent (1/0): print each program and outcome to stderr",
  IMPROV_STORE: "store when the option is absent: a file path, sqlite: URL or postgres:// URL",
  IMPROV_SANDBOX_PROCESSES: "sandbox processes kept (1 to 64)",
} as const;

/** The environment variables improv reads. */
export const ENV_NAMES = Object.keys(ENV_VARIABLES) as (keyof typeof ENV_VARIABLES)[];

export type EnvName = keyof typeof ENV_VARIABLES;

/** The trimmed value of `name`, or `undefined` when it is unset or blank. */
export function readEnv(name: EnvName): string | undefined {
  const value = process.env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

/** `IMPROV_DEBUG`-style flags: 1/true/yes/on are true, 0/false/no/off are false. */
export function readEnvFlag(name: EnvName): boolean | undefined {
  const value = readEnv(name)?.toLowerCase();
  if (value === undefined) return undefined;
  if (["1", "true", "yes", "on"].includes(value)) return true;
  if (["0", "false", "no", "off"].includes(value)) return false;
  process.emitWarning(`Ignoring ${name}=${JSON.stringify(value)}: use 1/true/yes/on or 0/false/no/off.`, { code: "IMPROV_ENV" });
  return undefined;
}

/** The API key given, else the environment's; a `TypeError` saying how to give one when neither is there. */
export function apiKeyFrom(given: string | undefined, envName: EnvName, owner: string): string {
  const apiKey = given?.trim() || readEnv(envName);
  if (apiKey !== undefined) return apiKey;
  const blank = given === undefined ? "" : " (the apiKey given is blank)";
  throw new TypeError(`${owner} has no API key${blank}. Pass { apiKey } or set the ${envName} environment variable.`);
}
