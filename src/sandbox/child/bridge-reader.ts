/**
 * The sandbox process's one reader of what a program asks the host (see `BridgeKinds` in
 * `../protocol.ts`). The request is an untrusted copy made in the isolate: its shape and sizes
 * are checked here, kind by kind, before it goes to the host.
 */
import { maxEncodedChars, SANDBOX_LIMITS } from "../limits.ts";
import { BRIDGE_KINDS, type BridgeKind, type BridgeRequest, type ContentRequest, type DelegateRequest, type ToolRequest } from "../protocol.ts";

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

function readDelegate({ role, method, args, options, optionsTooLarge }: Record<string, unknown>): DelegateRequest | string {
  if (typeof role !== "string" || typeof method !== "string" || role.length > 1_000 || method.length > 1_000) return "The delegate request is malformed.";
  if ((typeof args !== "string" && args !== null) || (typeof options !== "string" && options !== null)) return "The delegate request is malformed.";
  // Longer text than the encoder writes for a value within the limit: too large, as the host would say.
  const argsFit = args === null || args.length <= maxEncodedChars(SANDBOX_LIMITS.maxDelegateArgumentChars);
  const optionsFit = options === null || options.length <= maxEncodedChars(SANDBOX_LIMITS.maxDelegateOptionChars);
  return { kind: "delegate", role, method, args: argsFit ? args : null, options: optionsFit ? options : null, optionsTooLarge: optionsTooLarge === true || !optionsFit };
}
