/**
 * A program's `fetch`, made by the host under the agent's egress policy: the request
 * is checked before any server is contacted (scheme, origin, method, headers, the address an IP
 * literal denotes), host names are resolved by the host and every address checked in the
 * connection's own lookup, so the socket goes to an address that was checked; redirects are
 * followed by hand, each hop checked again; the body is read whole within `maxResponseBytes`
 * after decompression; the values the host adds never reach what the program sees.
 */
import { isIP, type LookupFunction } from "node:net";
import { Agent, type Dispatcher } from "undici";
import { addressKind, hostAddress } from "./addresses.ts";
import { BAD_HEADER_VALUE, HEADER_NAME, matchEntry, type AllowEntry, type EgressPolicy } from "./policy.ts";
import type { CallTreeEgress } from "./call-tree.ts";
import { cleanUrl } from "./provenance.ts";
import { BodyTooLarge, readBody } from "./response-body.ts";
import type { FetchAnswer } from "../sandbox/index.ts";
import { causesOf, errorCode, innermostError } from "../shared/index.ts";

/** What a program asked for, as the bridge reader checked its shape. */
export interface EgressRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string | null;
}

/** A response as the program receives it (the bridge's answer): the body read whole, `set-cookie` left out, nothing of the injected values in it. */
export type FetchedResponse = FetchAnswer;

/** A request that passed every check made before a server is contacted. */
export interface PreparedRequest {
  readonly url: URL;
  readonly method: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string | null;
}

/** Why a request was not answered: refused by the policy (nothing sent there), or failed on the way. */
export interface EgressFailure {
  readonly ok: false;
  readonly refused: boolean;
  readonly message: string;
  /** The run ended (its call's end or its signal) before the answer came. */
  readonly cancelled?: true;
}

export type EgressOutcome = { readonly ok: true; readonly response: FetchedResponse; readonly bytes: number; readonly finalUrl: URL } | EgressFailure;

/**
 * A redirect that keeps a method that may write (and its body): a new request, not sent, for
 * the caller to approve and send on with {@link sendRequest} (`hops` and `first` passed along).
 */
export interface WriteRedirect {
  readonly ok: "redirect";
  readonly next: PreparedRequest;
  /** The URL that answered with the redirect, and its status. */
  readonly from: URL;
  readonly status: number;
  /** Redirects followed so far, this one included. */
  readonly hops: number;
  /** The URL first asked for. */
  readonly first: URL;
}

/** Methods that only read; any other may change the world. */
const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Whether a request with this (upper-case) method may change the world. */
export function mayWrite(method: string): boolean {
  return !READ_METHODS.has(method);
}

/** A URL as it is sent: without its fragment. */
export function sentUrl(url: URL): string {
  const sent = new URL(url.href);
  sent.hash = "";
  return sent.href;
}

/** Most redirects followed for one request. */
export const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers a program may not set: the host manages them. */
const MANAGED_HEADERS = new Set(["host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer", "proxy-connection", "expect"]);
/** Credentials: dropped for an origin the host adds headers for, and on a redirect to another origin. */
const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "proxy-authorization"]);
const MAX_STATUS_TEXT_CHARS = 200;

/** A refusal raised in a connection's lookup: no connection was made. */
class AddressRefused extends Error {}

function refused(message: string): EgressFailure {
  return { ok: false, refused: true, message };
}

function failed(message: string, cancelled = false): EgressFailure {
  return cancelled ? { ok: false, refused: false, message, cancelled: true } : { ok: false, refused: false, message };
}

/** Checks a request against the policy before anything is sent; a refusal says which rule. */
export function prepareRequest(policy: EgressPolicy, request: EgressRequest, tree?: CallTreeEgress): PreparedRequest | EgressFailure {
  // Only a refusal shows the URL.
  const shown = () => cleanUrl(request.url, policy.redactor);
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return refused(`fetch(${JSON.stringify(shown().slice(0, 200))}): not an absolute URL.`);
  }
  const method = request.method.toUpperCase();
  if (!policy.methods.has(method)) return refused(`fetch ${shown()}: the method ${method.slice(0, 20)} is not allowed (egress.methods: ${[...policy.methods].join(", ")}).`);
  // OPTIONS is a read: with a body it could write unapproved.
  if ((method === "GET" || method === "HEAD" || method === "OPTIONS") && request.body !== null) return refused(`fetch ${shown()}: a ${method} request cannot have a body.`);
  const checked = checkUrl(policy, url, tree);
  if (!("entry" in checked)) return checked;
  const headers: [string, string][] = [];
  for (const [name, value] of request.headers) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name) || BAD_HEADER_VALUE.test(value)) return refused(`fetch ${shown()}: the header ${JSON.stringify(name.slice(0, 100))} is not a valid header.`);
    if (MANAGED_HEADERS.has(lower) || lower.startsWith("proxy-")) return refused(`fetch ${shown()}: the header ${lower} is set by the host, not by programs.`);
    headers.push([lower, value]);
  }
  return { url, method, headers, body: request.body };
}

/** The rules a URL must pass, for the first request and each redirect: scheme, user info, origin, the address an IP literal denotes, and the call tree's barrier. */
function checkUrl(policy: EgressPolicy, url: URL, tree: CallTreeEgress | undefined): { readonly entry: AllowEntry } | EgressFailure {
  const shown = () => cleanUrl(url, policy.redactor);
  if (url.protocol !== "http:" && url.protocol !== "https:") return refused(`fetch ${shown()}: only http: and https: URLs can be fetched.`);
  if (url.username !== "" || url.password !== "") return refused(`fetch ${shown()}: a URL with a user name or password is refused; the application gives credentials in egress.headers.`);
  const entry = matchEntry(policy, url);
  if (entry === undefined) return refused(`fetch ${shown()}: the origin ${url.origin} is not in egress.allow.`);
  const address = hostAddress(url.hostname);
  if (address !== undefined) {
    const kind = addressKind(address);
    // An entry that names this address (and port) opens it, whatever it is.
    if (kind !== "public" && !entry.exactAddress) return refused(`fetch ${shown()}: ${address} is a ${kind} address.`);
  }
  const barred = tree?.barred(policy, url, entry);
  if (barred !== undefined) return refused(`fetch ${shown()}: ${barred}`);
  return { entry };
}

const dispatchers = new WeakMap<EgressPolicy, Agent>();

/**
 * The policy's connection pool. Its connections resolve names in a lookup of their own, which
 * checks every address it is given and hands the socket only those: a name that resolves to a
 * refused address (all or in part, now or at a later resolution) gets no connection.
 */
function dispatcherFor(policy: EgressPolicy): Agent {
  let dispatcher = dispatchers.get(policy);
  if (dispatcher === undefined) {
    const lookup: LookupFunction = (hostname, options, callback) => {
      checkedAddresses(policy, hostname).then(
        (addresses) => (options.all ? callback(null, addresses.map((address) => ({ address, family: isIP(address) }))) : callback(null, addresses[0]!, isIP(addresses[0]!))),
        (error: NodeJS.ErrnoException) => callback(error, ""),
      );
    };
    dispatcher = new Agent({ connect: { lookup, timeout: policy.timeoutMs }, keepAliveTimeout: 1_000, keepAliveMaxTimeout: 10_000, allowH2: false });
    dispatchers.set(policy, dispatcher);
  }
  return dispatcher;
}

async function checkedAddresses(policy: EgressPolicy, hostname: string): Promise<string[]> {
  let addresses: readonly string[];
  try {
    addresses = await policy.resolve(hostname);
  } catch (error) {
    throw Object.assign(new Error(`the name ${hostname} could not be resolved (${(error as { code?: string }).code ?? (error as Error).message})`), { code: "ENOTFOUND" });
  }
  if (addresses.length === 0) throw Object.assign(new Error(`the name ${hostname} has no address`), { code: "ENOTFOUND" });
  // `localhost` reaches loopback only through an entry that names it (the origin check made sure of that and of its port).
  const loopbackNamed = hostname === "localhost" && policy.entries.some((entry) => entry.exactAddress && entry.host === "localhost");
  for (const address of addresses) {
    const kind = addressKind(address);
    if (kind === "public" || (kind === "loopback" && loopbackNamed)) continue;
    throw new AddressRefused(kind === "not an IP address" ? `${hostname} resolved to something that is not an IP address` : `${hostname} resolves to ${address}, a ${kind} address`);
  }
  return [...addresses];
}

/** Where a request stands among the fetches of its call tree and the hops of its redirects. */
export interface SendContext {
  /** The call tree's count and barrier; each hop with injected headers is told to it, each hop checked against it. */
  readonly tree?: CallTreeEgress | undefined;
  /** For a request a {@link WriteRedirect} led to: redirects followed before it, and the URL first asked for. */
  readonly hops?: number;
  readonly first?: URL;
}

/**
 * Sends a prepared request and reads its answer, within `timeLeftMs` (the policy's `timeoutMs`
 * or less) and `signal` (the run's end). Redirects are followed here, at most
 * {@link MAX_REDIRECTS} in all, each hop checked as the first request was; a redirect that
 * keeps a method that may write is not followed but handed back (a {@link WriteRedirect}), to
 * be approved as a request of its own.
 */
export async function sendRequest(policy: EgressPolicy, prepared: PreparedRequest, signal: AbortSignal, timeLeftMs: number, context: SendContext = {}): Promise<EgressOutcome | WriteRedirect> {
  const { tree } = context;
  const first = context.first ?? prepared.url;
  const limitMs = Math.min(policy.timeoutMs, Math.max(0, timeLeftMs));
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, limitMs);
  const onAbort = () => controller.abort();
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  let url = prepared.url;
  try {
    let { method, body } = prepared;
    let headers = prepared.headers;
    for (let hop = context.hops ?? 0; ; hop += 1) {
      const entry = matchEntry(policy, url)!;
      if (entry.headers.length > 0) tree?.sendsCredentials(url, entry, policy.redactor);
      // undici's `request`, not its `fetch`: the same connections at a fraction of the cost; what
      // `fetch` adds (default headers, decoding, redirects by hand) is done here.
      const response = await dispatcherFor(policy).request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: method as Dispatcher.HttpMethod,
        headers: headersFor(entry, headers, body !== null, url.protocol === "https:"),
        body: body ?? undefined,
        signal: controller.signal,
      });
      const location = REDIRECTS.has(response.statusCode) ? headerValue(response.headers.location) : undefined;
      if (location === undefined) return await readResponse(policy, response, method, url, hop > 0);
      await discard(response.body);
      if (hop >= MAX_REDIRECTS) return failed(`fetch ${cleanUrl(first, policy.redactor)}: more than ${MAX_REDIRECTS} redirects.`);
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        return failed(`fetch ${cleanUrl(url, policy.redactor)}: the server redirected to something that is not a URL.`);
      }
      const checked = checkUrl(policy, next, tree);
      if (!("entry" in checked)) return { ...checked, message: `${checked.message.replace(/\.$/, "")} (redirected from ${cleanUrl(url, policy.redactor)}).` };
      // As browsers do: a 303, or a POST answered 301 or 302, goes on as a GET without its body.
      if (response.statusCode === 303 ? method !== "HEAD" : (response.statusCode === 301 || response.statusCode === 302) && method === "POST") {
        method = "GET";
        body = null;
      }
      // Credentials the program set do not follow it to another origin.
      if (next.origin !== url.origin) headers = headers.filter(([name]) => !CREDENTIAL_HEADERS.has(name));
      // A write goes nowhere the application did not approve: the hop is a request of its own.
      if (mayWrite(method)) return { ok: "redirect", next: { url: next, method, headers, body }, from: url, status: response.statusCode, hops: hop + 1, first };
      url = next;
    }
  } catch (error) {
    if (error instanceof BodyTooLarge) return failed(`fetch ${cleanUrl(url, policy.redactor)}: the body is larger than egress.maxResponseBytes (${policy.maxResponseBytes} bytes).`);
    if (timedOut) return failed(`fetch ${cleanUrl(url, policy.redactor)}: no answer within ${limitMs} ms${limitMs < policy.timeoutMs ? " (the call's callTimeoutMs)" : " (egress.timeoutMs)"}.`);
    if (signal.aborted) return failed(`fetch ${cleanUrl(url, policy.redactor)}: the call ended before the answer came.`, true);
    const refusal = causesOf(error).find((cause): cause is AddressRefused => cause instanceof AddressRefused);
    if (refusal !== undefined) return refused(`fetch ${cleanUrl(url, policy.redactor)}: ${refusal.message}; refused.`);
    return failed(policy.redactor.redact(`fetch ${cleanUrl(url, policy.redactor)}: ${networkProblem(error)}.`));
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
}

/**
 * The headers sent to an origin: the program's (less credentials where the host adds headers),
 * then the host's own, and the defaults `fetch` sends where neither set them.
 */
function headersFor(entry: AllowEntry, headers: readonly (readonly [string, string])[], hasBody: boolean, https: boolean): string[] {
  const injected = new Set(entry.headers.map(([name]) => name));
  const own = entry.headers.length === 0 ? headers : headers.filter(([name]) => !CREDENTIAL_HEADERS.has(name) && !injected.has(name));
  const sent = [...own, ...entry.headers];
  const flat: string[] = [];
  const named = new Set<string>();
  for (const [name, value] of sent) {
    flat.push(name, value);
    named.add(name);
  }
  const defaults: [string, string][] = [
    ["accept", "*/*"],
    ["accept-language", "*"],
    ["sec-fetch-mode", "cors"],
    ["user-agent", "node"],
    ["accept-encoding", https ? "br, gzip, deflate, zstd" : "gzip, deflate"],
  ];
  if (hasBody) defaults.push(["content-type", "text/plain;charset=UTF-8"]);
  for (const [name, value] of defaults) if (!named.has(name)) flat.push(name, value);
  return flat;
}

/** One value of a response header: repeated ones joined as `fetch`'s Headers join them. */
function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}

/** Lets go of a body nobody reads: what came of it is read and dropped (up to undici's limit, past which the connection is closed). */
async function discard(body: Dispatcher.ResponseData["body"]): Promise<void> {
  await body.dump().catch(() => undefined);
}

/** Responses that have no body whatever the server sent (as `fetch` treats them). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

async function readResponse(policy: EgressPolicy, response: Dispatcher.ResponseData, method: string, url: URL, redirected: boolean): Promise<EgressOutcome> {
  const status = response.statusCode;
  let body: Buffer = Buffer.alloc(0);
  if (method === "HEAD" || NULL_BODY_STATUSES.has(status)) await discard(response.body);
  // Counted as it is decoded: a small body that inflates past the limit stops there (a
  // `BodyTooLarge`, the body abandoned, and with it the connection).
  else body = await readBody(response.body, headerValue(response.headers["content-encoding"]), policy.maxResponseBytes);
  // Sorted by name, as `fetch`'s Headers list them.
  const headers: [string, string][] = [];
  for (const name of Object.keys(response.headers).sort()) {
    const value = headerValue(response.headers[name]);
    if (value === undefined || name === "set-cookie" || name === "set-cookie2") continue;
    headers.push([name, policy.redactor.redact(value)]);
  }
  const text = decode(body, headerValue(response.headers["content-type"]) ?? null);
  return {
    ok: true,
    bytes: body.byteLength,
    finalUrl: url,
    response: {
      status,
      statusText: policy.redactor.redact(response.statusText).slice(0, MAX_STATUS_TEXT_CHARS),
      url: policy.redactor.redact(url.href),
      redirected,
      headers,
      body: policy.redactor.redact(text),
    },
  };
}

/** The body as text, in the charset the server named when it is one this runtime knows, else UTF-8. */
function decode(body: Buffer, contentType: string | null): string {
  const charset = /charset\s*=\s*"?([\w-]+)/i.exec(contentType ?? "")?.[1];
  if (charset !== undefined) {
    try {
      return new TextDecoder(charset).decode(body);
    } catch {
      // Not a charset this runtime decodes: UTF-8, as most are.
    }
  }
  return body.toString("utf8");
}

/** What went wrong on the network, in a few words: the innermost error's code and message, no stack. */
function networkProblem(error: unknown): string {
  const innermost = innermostError(error);
  if (!(innermost instanceof Error)) return "the request failed";
  const code = errorCode(innermost);
  const message = innermost.message.replace(/\s+/g, " ").slice(0, 300);
  return code !== undefined && !message.includes(code) ? `${message} (${code})` : message;
}
