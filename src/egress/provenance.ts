/**
 * What a record, a log line or a program may see of a fetch: URLs without user info, fragments
 * or the values of query parameters whose names look like secrets, and nothing recognizable of
 * the values the host adds to requests (`egress.headers`, see `redaction.ts`).
 */
import { NO_REDACTION, REDACTED, type Redactor } from "./redaction.ts";

/** Query parameter names whose values are taken out of recorded URLs. */
const SECRET_PARAMETER = /key|token|secret|passw|pwd|^sig$|signature|^auth(?!or)|credential|session|cookie/i;
/** Longest URL a record keeps. @unit characters */
export const MAX_RECORDED_URL_CHARS = 2_000;

/** A URL as records, spans and error messages show it: no user info, no fragment, secret-looking query values and injected secrets taken out, bounded. */
export function cleanUrl(url: string | URL, redactor: Redactor = NO_REDACTION): string {
  let parsed: URL;
  try {
    parsed = typeof url === "string" ? new URL(url) : new URL(url.href);
  } catch {
    return bounded(redactor.redact(String(url)));
  }
  parsed.username = "";
  parsed.password = "";
  parsed.hash = "";
  if (parsed.search !== "") {
    // Part by part, so the parts kept stay as they were written.
    const parts = parsed.search.slice(1).split("&").map((part) => {
      const equals = part.indexOf("=");
      const name = equals === -1 ? part : part.slice(0, equals);
      return equals !== -1 && SECRET_PARAMETER.test(decodeName(name)) ? `${name}=${REDACTED}` : part;
    });
    parsed.search = parts.join("&");
  }
  return bounded(redactor.redact(parsed.href));
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, " "));
  } catch {
    return name;
  }
}

function bounded(text: string): string {
  return text.length <= MAX_RECORDED_URL_CHARS ? text : `${text.slice(0, MAX_RECORDED_URL_CHARS - 1)}…`;
}
