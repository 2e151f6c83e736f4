/** Environment variables, read in one place: trimmed, and blank counts as unset. */

/** The environment variables improv reads. */
export const ENV_NAMES = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "IMPROV_MODEL", "IMPROV_LOG", "IMPROV_DEBUG", "IMPROV_VERBOSE", "IMPROV_STORE", "IMPROV_SANDBOX_PROCESSES"] as const;

export type EnvName = (typeof ENV_NAMES)[number];

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
