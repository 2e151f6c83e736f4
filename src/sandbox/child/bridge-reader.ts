/**
 * The sandbox process's one reader of what a program asks the host (see `BridgeKinds` in
 * `../protocol.ts`). The request is an untrusted copy made in the isolate: its shape and sizes
 * are checked here, kind by kind, before it goes to the host.
 */
import { maxEncodedChars, SANDBOX_LIMITS } from "../limits.ts";
import { BRIDGE_KINDS, type BridgeKind, type BridgeRequest, type ContentRequest, type DelegateRequest, type FetchRequest, type ToolRequest } from "../protocol.ts";

/** The request, checked; or why it is refused (the program gets an `invalid_input` failure). */
export function readBridgeRequest(untrusted: unknown): BridgeRequest | string {
  if (typeof untrusted !== "object" || untrusted === null) return "The request is malformed.";
  const fields = untrusted as Record<string, unknown>;
  const { kind } = fields;
  if (typeof kind !== "string" || !Object.hasOwn(BRIDGE_KINDS, kind)) return "The request is malformed.";
  const known = kind as BridgeKind;
  switch (known) {
    case "delegate":
      return readDelegate(fields);
    case "content":
      return readContent(fields);
    case "tool":
      return readTool(fields);
    case "fetch":
      return readFetch(fields);
    default: {
      const unread: never = known;
      return `No reader for requests of kind ${String(unread)}.`;
    }
  }
}

function readContent({ ref }: Record<string, unknown>): ContentRequest | string {
  return typeof ref === "string" && ref.length <= 1_000 ? { kind: "content", ref } : "content(ref) takes a record's content_ref (a string).";
}

function readTool({ tool, input }: Record<string, unknown>): ToolRequest | string {
  if (typeof tool !== "string" || tool.length > 200 || (typeof input !== "string" && input !== null)) return "The tool request is malformed.";
  // Longer text than the encoder writes for a value within the limit: too large, as the host would say.
  const fits = input === null || input.length <= maxEncodedChars(SANDBOX_LIMITS.maxToolInputChars);
  return { kind: "tool", tool, input: fits ? input : null };
}

function readFetch({ url, method, headers, body }: Record<string, unknown>): FetchRequest | string {
  const { maxFetchUrlChars, maxFetchHeaders, maxFetchHeaderChars, maxFetchBodyChars } = SANDBOX_LIMITS;
  if (typeof url !== "string" || url.length > maxFetchUrlChars) return `fetch(url): the URL must be a string of at most ${maxFetchUrlChars} characters.`;
  if (typeof method !== "string" || method.length === 0 || method.length > 20) return "fetch(url, { method }): the method must be a short string such as \"GET\".";
  if (!Array.isArray(headers) || headers.length > maxFetchHeaders) return `fetch(url, { headers }): at most ${maxFetchHeaders} headers, each a name and a string value.`;
  const read: [string, string][] = [];
  for (const pair of headers as unknown[]) {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" || typeof pair[1] !== "string" || pair[0].length > 256 || pair[1].length > maxFetchHeaderChars) {
      return `fetch(url, { headers }): each header is a name and a string value of at most ${maxFetchHeaderChars} characters.`;
    }
    read.push([pair[0], pair[1]]);
  }
  if (body !== null && (typeof body !== "string" || body.length > maxFetchBodyChars)) return `fetch(url, { body }): the body must be a string of at most ${maxFetchBodyChars} characters.`;
  return { kind: "fetch", url, method, headers: read, body };
}

function readDelegate({ role, method, args, kwargs, options, optionsTooLarge }: Record<string, unknown>): DelegateRequest | string {
  if (typeof role !== "string" || typeof method !== "string" || role.length > 1_000 || method.length > 1_000) return "The delegate request is malformed.";
  if ((typeof args !== "string" && args !== null) || (typeof kwargs !== "string" && kwargs !== null) || (typeof options !== "string" && options !== null)) return "The delegate request is malformed.";
  // Longer text than the encoder writes for a value within the limit: too large, as the host would say.
  const argumentsFit = (text: string | null) => text === null || text.length <= maxEncodedChars(SANDBOX_LIMITS.maxDelegateArgumentChars);
  const optionsFit = options === null || options.length <= maxEncodedChars(SANDBOX_LIMITS.maxDelegateOptionChars);
  // Named arguments too large to read make the whole argument list too large.
  const fit = argumentsFit(args) && argumentsFit(kwargs);
  return { kind: "delegate", role, method, args: fit ? args : null, kwargs: fit ? kwargs : null, options: optionsFit ? options : null, optionsTooLarge: optionsTooLarge === true || !optionsFit };
}
