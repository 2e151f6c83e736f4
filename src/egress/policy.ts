/**
 * The `egress` agent option, read once at construction: the origins programs may `fetch` from,
 * the headers the host adds for some of them, and the limits. A bad option is a `TypeError`
 * that says which part is wrong and how to write it.
 */
import { createHash } from "node:crypto";
import { lookup } from "node:dns/promises";
import { stringify } from "safe-stable-stringify";
import { hostAddress } from "./addresses.ts";
import { redactorFor, type Redactor } from "./redaction.ts";

/** The `egress` agent option. */
export interface EgressOptions {
  /**
   * The origins programs may fetch from: scheme (`http:` only where an entry says so), host (a
   * leading `*.` matches its subdomains) and optional port (default: the scheme's). An entry
   * that names an IP address, or `localhost`, opens that address and port even when it is
   * private or loopback.
   */
  readonly allow: readonly string[];
  /** Headers the host adds to requests for an origin of `allow` (keyed as written there). Programs never see them. */
  readonly headers?: Readonly<Record<string, Readonly<Record<string, string>>>> | undefined;
  /** Longest body read, after decompression. Default 5,000,000; at most 8,000,000. @unit bytes */
  readonly maxResponseBytes?: number | undefined;
  /** Longest wait for one request, redirects, headers and body included. Default 10,000. @unit ms */
  readonly timeoutMs?: number | undefined;
  /** Requests one call's programs may make. Default 32; at most 256. */
  readonly maxRequests?: number | undefined;
  /** Methods programs may use. Default `["GET", "HEAD"]`. */
  readonly methods?: readonly string[] | undefined;
  /** How host names are resolved; default: the system's resolver. Every address it gives is checked. */
  readonly resolve?: (hostname: string) => readonly string[] | Promise<readonly string[]> | undefined;
  /**
   * Where what a program read from an origin with `headers` may go next. Once a call (or a call
   * it delegates) has sent a request with injected headers, requests to any other origin in that
   * call tree are refused unless a flow `{ from, to }` names both (origins as `allow` has them).
   */
  readonly flows?: readonly { readonly from: string; readonly to: string }[] | undefined;
}

/** One origin of `allow`. */
export interface AllowEntry {
  /** As the prompt and error messages show it: `https://*.wikipedia.org`, `http://127.0.0.1:8080`. */
  readonly origin: string;
  readonly scheme: "http:" | "https:";
  /** Lower case; for a wildcard, the domain whose subdomains match. */
  readonly host: string;
  readonly wildcard: boolean;
  readonly port: number;
  /** Names an IP address or `localhost`: that address may be private or loopback. */
  readonly exactAddress: boolean;
  /** Headers the host adds for this origin: lower-case names. */
  readonly headers: readonly (readonly [string, string])[];
}

/** The `egress` option as requests use it. */
export interface EgressPolicy {
  readonly entries: readonly AllowEntry[];
  readonly maxResponseBytes: number;
  readonly timeoutMs: number;
  readonly maxRequests: number;
  readonly methods: ReadonlySet<string>;
  readonly resolve: (hostname: string) => Promise<readonly string[]>;
  /** Takes every recognizable copy of the values the host adds out of whatever a program, a record or a log could see. */
  readonly redactor: Redactor;
  /** The flows `egress.flows` allows past the barrier: the `allow` entry read from, to the entries that may be reached after it. */
  readonly flows: ReadonlyMap<AllowEntry, ReadonlySet<AllowEntry>>;
  /** A hash of the origins, header names, methods and limits: part of a kept program's key. */
  readonly fingerprint: string;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 5_000_000;
export const MAX_RESPONSE_BYTES = 8_000_000;
export const DEFAULT_EGRESS_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_REQUESTS = 32;
const MAX_MAX_REQUESTS = 256;
const MAX_ENTRIES = 1_000;
const DEFAULT_METHODS = ["GET", "HEAD"];
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
/** A header name (RFC 9110's token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
/** Characters a header value may not hold. */
export const BAD_HEADER_VALUE = /[\r\n\0]/;

const systemResolve = async (hostname: string): Promise<readonly string[]> => (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** Reads the `egress` option; undefined when it is not given. Throws a `TypeError` that says what is wrong. */
export function readEgress(given: unknown): EgressPolicy | undefined {
  if (given === undefined) return undefined;
  if (typeof given !== "object" || given === null || Array.isArray(given)) throw new TypeError('Option "egress" must be an object such as { allow: ["https://example.com"] }.');
  const options = given as Record<string, unknown>;
  const known = new Set(["allow", "headers", "maxResponseBytes", "timeoutMs", "maxRequests", "methods", "resolve", "flows"]);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new TypeError(`Unknown egress option "${key}". Valid options: ${[...known].join(", ")}.`);
  }
  const { allow } = options;
  if (!Array.isArray(allow) || allow.length === 0) throw new TypeError('Option "egress.allow" must be a non-empty array of origins, such as ["https://example.com", "https://*.wikipedia.org"].');
  if (allow.length > MAX_ENTRIES) throw new TypeError(`Option "egress.allow" has ${allow.length} origins; at most ${MAX_ENTRIES} are allowed.`);
  const headers = readHeaders(options.headers);
  const entries = allow.map((text, index) => readEntry(text, index, headers));
  for (const origin of headers.keys()) {
    if (!allow.includes(origin)) throw new TypeError(`Option "egress.headers" has headers for "${origin}", which is not in egress.allow as written. Use the origin exactly as allow has it.`);
  }
  const maxResponseBytes = readCount(options.maxResponseBytes, "maxResponseBytes", DEFAULT_MAX_RESPONSE_BYTES, MAX_RESPONSE_BYTES);
  const timeoutMs = readCount(options.timeoutMs, "timeoutMs", DEFAULT_EGRESS_TIMEOUT_MS, 2 ** 31 - 1);
  const maxRequests = readCount(options.maxRequests, "maxRequests", DEFAULT_MAX_REQUESTS, MAX_MAX_REQUESTS);
  const methods = readMethods(options.methods);
  const resolve = readResolve(options.resolve);
  const flows = readFlows(options.flows, allow as unknown[], entries);
  const redactor = redactorFor(entries.flatMap((entry) => entry.headers));
  const flowList = [...flows].map(([from, to]) => [from.origin, [...to].map((entry) => entry.origin)]);
  const fingerprint = createHash("sha256")
    .update(stringify([entries.map((entry) => [entry.origin, entry.headers.map(([name]) => name)]), [...methods], maxResponseBytes, timeoutMs, maxRequests, ...(flowList.length > 0 ? [flowList] : [])]) ?? "")
    .digest("hex")
    .slice(0, 12);
  return Object.freeze({ entries: Object.freeze(entries), maxResponseBytes, timeoutMs, maxRequests, methods, resolve, redactor, flows, fingerprint });
}

function readEntry(text: unknown, index: number, headers: ReadonlyMap<string, readonly (readonly [string, string])[]>): AllowEntry {
  const problem = (why: string) => new TypeError(`Option "egress.allow[${index}]" ${why}. Write an origin such as "https://example.com", "https://*.example.com" or "http://127.0.0.1:8080".`);
  if (typeof text !== "string" || text.length === 0 || text.length > 300) throw problem("must be a string of at most 300 characters");
  const wildcard = text.includes("://*.");
  let url: URL;
  try {
    url = new URL(wildcard ? text.replace("://*.", "://wildcard-label.") : text);
  } catch {
    throw problem(`("${text}") is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw problem(`("${text}") must use http: or https:`);
  if (url.username !== "" || url.password !== "") throw problem(`("${text}") must not hold a user name or password; put credentials in egress.headers`);
  if ((url.pathname !== "/" && url.pathname !== "") || url.search !== "" || url.hash !== "" || /[?#]/.test(text)) throw problem(`("${text}") must be an origin, with no path, query or fragment`);
  const hostname = wildcard ? url.hostname.slice("wildcard-label.".length) : url.hostname;
  if (hostname.includes("*")) throw problem(`("${text}") may hold "*" only as its host's first label ("*.example.com")`);
  const address = hostAddress(hostname);
  if (wildcard && (address !== undefined || !hostname.includes("."))) throw problem(`("${text}") must put "*." before a domain of two labels or more, not an address or a top-level domain`);
  const scheme = url.protocol;
  const port = url.port === "" ? (scheme === "https:" ? 443 : 80) : Number(url.port);
  const origin = `${scheme}//${wildcard ? "*." : ""}${hostname}${url.port === "" ? "" : `:${url.port}`}`;
  return Object.freeze({ origin, scheme, host: hostname, wildcard, port, exactAddress: !wildcard && (address !== undefined || hostname === "localhost"), headers: headers.get(text) ?? [] });
}

function readHeaders(given: unknown): Map<string, readonly (readonly [string, string])[]> {
  const byOrigin = new Map<string, readonly (readonly [string, string])[]>();
  if (given === undefined) return byOrigin;
  if (typeof given !== "object" || given === null || Array.isArray(given)) throw new TypeError('Option "egress.headers" must be an object of headers by origin, such as { "https://api.example.com": { authorization: "Bearer …" } }.');
  for (const [origin, set] of Object.entries(given)) {
    if (typeof set !== "object" || set === null || Array.isArray(set)) throw new TypeError(`Option "egress.headers" for "${origin}" must be an object of header names and values.`);
    const pairs: [string, string][] = [];
    for (const [name, value] of Object.entries(set)) {
      if (!HEADER_NAME.test(name)) throw new TypeError(`Option "egress.headers" for "${origin}": "${name.slice(0, 100)}" is not a header name.`);
      // The value is a secret: never repeated in a message.
      if (typeof value !== "string" || BAD_HEADER_VALUE.test(value) || value.length > 16_384) throw new TypeError(`Option "egress.headers" for "${origin}": the value of ${name} must be a string of at most 16,384 characters with no line breaks.`);
      pairs.push([name.toLowerCase(), value]);
    }
    byOrigin.set(origin, Object.freeze(pairs.map((pair) => Object.freeze(pair))));
  }
  return byOrigin;
}

function readCount(given: unknown, name: string, fallback: number, max: number): number {
  if (given === undefined) return fallback;
  if (!Number.isSafeInteger(given) || (given as number) < 1 || (given as number) > max) throw new TypeError(`Option "egress.${name}" must be a whole number from 1 to ${max}.`);
  return given as number;
}

function readMethods(given: unknown): ReadonlySet<string> {
  if (given === undefined) return new Set(DEFAULT_METHODS);
  if (!Array.isArray(given) || given.length === 0) throw new TypeError(`Option "egress.methods" must be a non-empty array of HTTP methods, such as ["GET", "HEAD", "POST"].`);
  const methods = new Set<string>();
  for (const method of given) {
    const upper = typeof method === "string" ? method.toUpperCase() : "";
    if (!KNOWN_METHODS.has(upper)) throw new TypeError(`Option "egress.methods": ${JSON.stringify(method)} is not one of ${[...KNOWN_METHODS].join(", ")}.`);
    methods.add(upper);
  }
  return methods;
}

function readResolve(given: unknown): EgressPolicy["resolve"] {
  if (given === undefined) return systemResolve;
  if (typeof given !== "function") throw new TypeError('Option "egress.resolve" must be a function (hostname) => addresses.');
  const resolve = given as NonNullable<EgressOptions["resolve"]>;
  return async (hostname) => {
    const addresses = await resolve(hostname);
    if (!Array.isArray(addresses) || !addresses.every((address) => typeof address === "string")) throw new Error(`egress.resolve("${hostname}") did not give an array of addresses`);
    return addresses;
  };
}

const FLOW_SHAPE = 'such as { from: "https://api.example.com", to: "https://files.example.com" }, both origins as egress.allow has them';

/** `flows`: each `from` an origin of `allow` with headers, each `to` another origin of `allow`. */
function readFlows(given: unknown, allow: readonly unknown[], entries: readonly AllowEntry[]): ReadonlyMap<AllowEntry, ReadonlySet<AllowEntry>> {
  const flows = new Map<AllowEntry, Set<AllowEntry>>();
  if (given === undefined) return flows;
  if (!Array.isArray(given)) throw new TypeError(`Option "egress.flows" must be an array of { from, to }, ${FLOW_SHAPE}.`);
  if (given.length > MAX_ENTRIES) throw new TypeError(`Option "egress.flows" has ${given.length} flows; at most ${MAX_ENTRIES} are allowed.`);
  given.forEach((flow: unknown, index) => {
    const shaped = typeof flow === "object" && flow !== null && !Array.isArray(flow) && Object.keys(flow).every((key) => key === "from" || key === "to");
    const { from, to } = (shaped ? flow : {}) as { from?: unknown; to?: unknown };
    if (typeof from !== "string" || typeof to !== "string") throw new TypeError(`Option "egress.flows[${index}]" must be { from, to }, ${FLOW_SHAPE}.`);
    const entryOf = (origin: string) => {
      const at = allow.indexOf(origin);
      if (at === -1) throw new TypeError(`Option "egress.flows[${index}]": ${JSON.stringify(origin.slice(0, 300))} is not in egress.allow as written. Use the origin exactly as allow has it.`);
      return entries[at]!;
    };
    const source = entryOf(from);
    const target = entryOf(to);
    if (source.headers.length === 0) throw new TypeError(`Option "egress.flows[${index}]": the barrier starts only at an origin the host adds headers for, and egress.headers has none for ${JSON.stringify(from)}.`);
    let targets = flows.get(source);
    if (targets === undefined) flows.set(source, (targets = new Set()));
    targets.add(target);
  });
  return flows;
}

/** The entry of `allow` a URL's origin matches, or undefined. A wildcard matches subdomains only, never an address. */
export function matchEntry(policy: EgressPolicy, url: URL): AllowEntry | undefined {
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  const host = url.hostname;
  const isAddress = hostAddress(host) !== undefined;
  for (const entry of policy.entries) {
    if (entry.scheme !== url.protocol || entry.port !== port) continue;
    if (entry.wildcard ? !isAddress && host.endsWith(`.${entry.host}`) : host === entry.host) return entry;
  }
  return undefined;
}

/** The allowed origins, as the prompt lists them. */
export function allowedOrigins(policy: EgressPolicy): readonly string[] {
  return policy.entries.map((entry) => entry.origin);
}
