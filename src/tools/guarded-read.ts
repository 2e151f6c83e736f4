/**
 * Reads of values that come from applications and MCP servers, which may throw at any read
 * (getters, proxies): each answers a harmless default instead.
 */

export function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null;
}

/** `object[key]`, or undefined when reading it throws (a getter, a revoked proxy). */
export function read(object: object, key: string): unknown {
  try {
    return (object as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

export function has(object: object, key: string): boolean {
  try {
    return key in object;
  } catch {
    return false;
  }
}

export function ownKeys(object: object): string[] {
  try {
    return Object.keys(object);
  } catch {
    return [];
  }
}

export function readOption(options: object | undefined, key: string): unknown {
  return isObject(options) ? read(options, key) : undefined;
}

export function boundedInteger(value: unknown, fallback: number, min: number, max: number): number {
  if (typeof value !== "number" || Number.isNaN(value)) return fallback;
  return Math.min(max, Math.max(min, Math.floor(value)));
}
