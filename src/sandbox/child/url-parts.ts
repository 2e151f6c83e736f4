/**
 * Node's own URL parser for programs' `URL` (see `prelude/web.ts`): called synchronously from the
 * isolate with strings only, it answers with the URL's parts, or with why the input is not a URL.
 * It never throws across the boundary, and never reaches the network.
 */
const MAX_URL_CHARS = 65_536;
const SETTABLE = new Set(["href", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"]);

/** `parse` (href against base) or `set` (key of href to value): the parts in URL order, or a message. */
export function urlParts(operation: unknown, href: unknown, base: unknown, key: unknown, value: unknown): string[] | string {
  try {
    if (typeof href !== "string" || typeof base !== "string" || typeof key !== "string" || typeof value !== "string") return "Invalid URL: give strings.";
    if (href.length > MAX_URL_CHARS || base.length > MAX_URL_CHARS || value.length > MAX_URL_CHARS) return `Invalid URL: longer than ${MAX_URL_CHARS} characters.`;
    let url: URL;
    if (operation === "parse") {
      const parsed = URL.parse(href, base === "" ? undefined : base);
      if (parsed === null) return `Invalid URL: ${JSON.stringify(href.slice(0, 200))}${base === "" ? "" : ` against ${JSON.stringify(base.slice(0, 200))}`}`;
      url = parsed;
    } else if (operation === "set" && SETTABLE.has(key)) {
      url = new URL(href);
      if (key === "href") {
        const next = URL.parse(value);
        if (next === null) return `Invalid URL: ${JSON.stringify(value.slice(0, 200))}`;
        url = next;
      } else (url as unknown as Record<string, string>)[key] = value;
    } else return "Invalid URL operation.";
    return [url.href, url.origin, url.protocol, url.username, url.password, url.host, url.hostname, url.port, url.pathname, url.search, url.hash];
  } catch (error) {
    return `Invalid URL: ${error instanceof Error ? error.message.slice(0, 200) : "it could not be read"}`;
  }
}
