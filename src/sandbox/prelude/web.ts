/**
 * Web globals programs expect, with no network and nothing shared: `atob`, `btoa`, `TextEncoder`
 * and `TextDecoder` (UTF-8), `URLSearchParams`, and `URL`, whose parsing is Node's own in the
 * sandbox process (`urlParts`, a synchronous callback that takes strings and returns strings).
 * Runs inside the isolate before `hardenRealm`. Each group is built when a program first reads
 * one of its names (most programs use none, and a new agent's isolate should cost little), and
 * frozen then, as `hardenRealm` froze every other intrinsic. Sent as source text, so it must not
 * use anything from its module scope.
 */
export type UrlParts = (operation: string, href: string, base: string, key: string, value: string) => string[] | string;

export function createWebGlobals(urlParts: UrlParts): void {
  "use strict";
  const g = globalThis as Record<string, unknown>;
  const MAX_URL_CHARS = 65_536;
  const { defineProperty } = Object;
  const { freeze, isFrozen, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const ownKeys = Reflect.ownKeys;
  /** Freezes what a group made, and everything reachable from it that is not frozen yet (the intrinsics are). */
  const freezeAll = <T extends Record<string, unknown>>(made: T): T => {
    const pending: unknown[] = [made];
    while (pending.length > 0) {
      const value = pending.pop();
      if ((typeof value !== "object" && typeof value !== "function") || value === null || isFrozen(value)) continue;
      freeze(value);
      pending.push(getPrototypeOf(value));
      for (const key of ownKeys(value)) {
        const descriptor = getOwnPropertyDescriptor(value, key);
        if (descriptor === undefined) continue;
        if ("value" in descriptor) pending.push(descriptor.value);
        else pending.push(descriptor.get, descriptor.set);
      }
    }
    return made;
  };
  /** Puts `names` on the global object, made by `make` (once, frozen) when a program first reads one. */
  const lazy = (make: () => Record<string, unknown>, names: readonly string[]) => {
    let made: Record<string, unknown> | undefined;
    for (const name of names) {
      defineProperty(g, name, {
        get: () => (made ??= freezeAll(make()))[name],
        configurable: true,
        enumerable: false,
      });
    }
  };
  const fail = (name: string, message: string) => {
    const error = new Error(message);
    defineProperty(error, "name", { value: name, writable: true, configurable: true, enumerable: false });
    return error;
  };

  // Base64, as browsers define it: btoa takes characters of one byte each.
  lazy(() => {
    const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const btoa = function btoa(data: unknown): string {
      if (arguments.length === 0) throw new TypeError("btoa requires 1 argument.");
      const text = String(data);
      let out = "";
      for (let i = 0; i < text.length; i += 3) {
        const a = text.charCodeAt(i);
        const b = i + 1 < text.length ? text.charCodeAt(i + 1) : -1;
        const c = i + 2 < text.length ? text.charCodeAt(i + 2) : -1;
        if (a > 255 || b > 255 || c > 255) throw fail("InvalidCharacterError", "btoa: the string has a character outside Latin-1; encode it first (e.g. with TextEncoder).");
        out += ALPHABET[a >> 2]! + ALPHABET[((a & 3) << 4) | (b < 0 ? 0 : b >> 4)]! + (b < 0 ? "=" : ALPHABET[((b & 15) << 2) | (c < 0 ? 0 : c >> 6)]!) + (c < 0 ? "=" : ALPHABET[c & 63]!);
      }
      return out;
    };
    const atob = function atob(data: unknown): string {
      if (arguments.length === 0) throw new TypeError("atob requires 1 argument.");
      let text = String(data).replace(/[\t\n\f\r ]/g, "");
      if (text.length % 4 === 0) text = text.replace(/==?$/, "");
      if (text.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(text)) throw fail("InvalidCharacterError", "atob: the string is not valid base64.");
      let out = "";
      let bits = 0;
      let count = 0;
      for (let i = 0; i < text.length; i += 1) {
        bits = (bits << 6) | ALPHABET.indexOf(text[i]!);
        count += 6;
        if (count >= 8) {
          count -= 8;
          out += String.fromCharCode((bits >> count) & 255);
        }
      }
      return out;
    };
    return { btoa, atob };
  }, ["atob", "btoa"]);

  lazy(() => {
    class TextEncoder {
      get encoding(): string {
        return "utf-8";
      }
      encode(input: unknown = ""): Uint8Array {
        const text = String(input);
        const bytes: number[] = [];
        for (let i = 0; i < text.length; i += 1) {
          let code = text.charCodeAt(i);
          if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
            const next = text.charCodeAt(i + 1);
            if (next >= 0xdc00 && next <= 0xdfff) {
              code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
              i += 1;
            }
          }
          // A lone surrogate is encoded as U+FFFD, as the standard says.
          if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
          if (code < 0x80) bytes.push(code);
          else if (code < 0x800) bytes.push(0xc0 | (code >> 6), 0x80 | (code & 63));
          else if (code < 0x10000) bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
          else bytes.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 63), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
        }
        return new Uint8Array(bytes);
      }
    }
    const UTF8_LABELS = ["utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"];
    class TextDecoder {
      readonly #fatal: boolean;
      readonly #ignoreBOM: boolean;
      constructor(label: unknown = "utf-8", options: { fatal?: unknown; ignoreBOM?: unknown } = {}) {
        if (!UTF8_LABELS.includes(String(label).trim().toLowerCase())) throw new RangeError(`TextDecoder: only UTF-8 is available here, not "${String(label).slice(0, 50)}".`);
        this.#fatal = Boolean(options?.fatal);
        this.#ignoreBOM = Boolean(options?.ignoreBOM);
      }
      get encoding(): string {
        return "utf-8";
      }
      get fatal(): boolean {
        return this.#fatal;
      }
      get ignoreBOM(): boolean {
        return this.#ignoreBOM;
      }
      decode(input?: unknown): string {
        if (input === undefined) return "";
        let bytes: Uint8Array;
        if (input instanceof ArrayBuffer) bytes = new Uint8Array(input);
        else if (ArrayBuffer.isView(input)) bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
        else throw new TypeError("TextDecoder.decode takes an ArrayBuffer or a view of one (a Uint8Array, say).");
        let out = "";
        let i = !this.#ignoreBOM && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
        const bad = () => {
          if (this.#fatal) throw new TypeError("TextDecoder: the bytes are not valid UTF-8.");
          return "\ufffd";
        };
        while (i < bytes.length) {
          const first = bytes[i]!;
          const need = first < 0x80 ? 0 : first >= 0xc2 && first <= 0xdf ? 1 : first >= 0xe0 && first <= 0xef ? 2 : first >= 0xf0 && first <= 0xf4 ? 3 : -1;
          if (need < 0) {
            out += bad();
            i += 1;
            continue;
          }
          let code = need === 0 ? first : first & (0x3f >> need);
          let j = 1;
          for (; j <= need; j += 1) {
            const next = bytes[i + j];
            const low = j === 1 && first === 0xe0 ? 0xa0 : j === 1 && first === 0xf0 ? 0x90 : 0x80;
            const high = j === 1 && first === 0xed ? 0x9f : j === 1 && first === 0xf4 ? 0x8f : 0xbf;
            if (next === undefined || next < low || next > high) break;
            code = (code << 6) | (next & 63);
          }
          if (j <= need) {
            out += bad();
            i += j;
            continue;
          }
          out += String.fromCodePoint(code);
          i += need + 1;
        }
        return out;
      }
    }
    return { TextEncoder, TextDecoder };
  }, ["TextEncoder", "TextDecoder"]);

  lazy(() => {
    // application/x-www-form-urlencoded, as URLSearchParams reads and writes it.
    const decode = (text: string) => {
      const spaced = text.replace(/\+/g, " ");
      try {
        return decodeURIComponent(spaced);
      } catch {
        return spaced.replace(/%([0-9A-Fa-f]{2})/g, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      }
    };
    const encode = (text: string) => encodeURIComponent(text).replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%20/g, "+");
    const owners = new WeakMap<object, { update(search: string): void }>();

    class URLSearchParams {
      #entries: [string, string][] = [];
      constructor(init: unknown = "") {
        if (typeof init === "object" && init !== null) {
          const iterator = (init as { [Symbol.iterator]?: unknown })[Symbol.iterator];
          if (typeof iterator === "function") {
            for (const pair of init as Iterable<unknown>) {
              const items = [...(pair as Iterable<unknown>)];
              if (items.length !== 2) throw new TypeError("URLSearchParams: each pair must have exactly two items.");
              this.#entries.push([String(items[0]), String(items[1])]);
            }
          } else for (const key of Object.keys(init)) this.#entries.push([key, String((init as Record<string, unknown>)[key])]);
        } else this.#parse(String(init));
      }
      #parse(text: string): void {
        this.#entries = [];
        for (const part of (text.startsWith("?") ? text.slice(1) : text).split("&")) {
          if (part === "") continue;
          const at = part.indexOf("=");
          this.#entries.push(at < 0 ? [decode(part), ""] : [decode(part.slice(0, at)), decode(part.slice(at + 1))]);
        }
      }
      #changed(): void {
        owners.get(this)?.update(this.toString());
      }
      get size(): number {
        return this.#entries.length;
      }
      append(name: unknown, value: unknown): void {
        this.#entries.push([String(name), String(value)]);
        this.#changed();
      }
      delete(name: unknown, value?: unknown): void {
        const key = String(name);
        this.#entries = this.#entries.filter(([k, v]) => k !== key || (value !== undefined && v !== String(value)));
        this.#changed();
      }
      get(name: unknown): string | null {
        const found = this.#entries.find(([k]) => k === String(name));
        return found === undefined ? null : found[1];
      }
      getAll(name: unknown): string[] {
        return this.#entries.filter(([k]) => k === String(name)).map(([, v]) => v);
      }
      has(name: unknown, value?: unknown): boolean {
        return this.#entries.some(([k, v]) => k === String(name) && (value === undefined || v === String(value)));
      }
      set(name: unknown, value: unknown): void {
        const key = String(name);
        const at = this.#entries.findIndex(([k]) => k === key);
        if (at < 0) this.#entries.push([key, String(value)]);
        else this.#entries = this.#entries.filter(([k], index) => k !== key || index === at).map((entry, index) => (index === at ? [key, String(value)] : entry));
        this.#changed();
      }
      sort(): void {
        this.#entries = this.#entries.map((entry, index) => [entry, index] as const).sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1])).map(([entry]) => entry);
        this.#changed();
      }
      forEach(callback: (value: string, key: string, params: URLSearchParams) => void, thisArg?: unknown): void {
        for (const [k, v] of [...this.#entries]) callback.call(thisArg, v, k, this);
      }
      keys(): IterableIterator<string> {
        return this.#entries.map(([k]) => k)[Symbol.iterator]();
      }
      values(): IterableIterator<string> {
        return this.#entries.map(([, v]) => v)[Symbol.iterator]();
      }
      entries(): IterableIterator<[string, string]> {
        return this.#entries.map(([k, v]) => [k, v] as [string, string])[Symbol.iterator]();
      }
      [Symbol.iterator](): IterableIterator<[string, string]> {
        return this.entries();
      }
      toString(): string {
        return this.#entries.map(([k, v]) => `${encode(k)}=${encode(v)}`).join("&");
      }
      /** Replaces the entries from a URL's query, without telling the URL (it told us). */
      static fromSearch(params: URLSearchParams, search: string): void {
        params.#parse(search);
      }
    }
    const reparse = URLSearchParams.fromSearch;
    delete (URLSearchParams as { fromSearch?: unknown }).fromSearch;

    const bounded = (text: string, what: string) => {
      if (text.length > MAX_URL_CHARS) throw new TypeError(`Invalid URL: the ${what} is longer than ${MAX_URL_CHARS} characters.`);
      return text;
    };
    const partsOf = (operation: string, href: string, base: string, key: string, value: string): string[] => {
      const answer = urlParts(operation, href, base, key, value);
      if (typeof answer === "string") throw new TypeError(answer);
      return answer;
    };

    // Its parts, in the order urlParts gives them: href, origin, protocol, username, password, host, hostname, port, pathname, search, hash.
    class URL {
      #parts: string[];
      readonly #params: URLSearchParams;
      constructor(input: unknown, base?: unknown) {
        this.#parts = partsOf("parse", bounded(String(input), "URL"), base === undefined ? "" : bounded(String(base), "base URL"), "", "");
        this.#params = new URLSearchParams(this.#parts[9]);
        owners.set(this.#params, { update: (search) => this.#set("search", search, false) });
      }
      static canParse(input: unknown, base?: unknown): boolean {
        try {
          new URL(input, base);
          return true;
        } catch {
          return false;
        }
      }
      static parse(input: unknown, base?: unknown): URL | null {
        try {
          return new URL(input, base);
        } catch {
          return null;
        }
      }
      #set(key: string, value: unknown, syncParams = true): void {
        this.#parts = partsOf("set", this.#parts[0]!, "", key, bounded(String(value), key));
        if (syncParams) reparse(this.#params, this.#parts[9]!);
      }
      get href(): string { return this.#parts[0]!; }
      set href(value: string) { this.#set("href", value); }
      get origin(): string { return this.#parts[1]!; }
      get protocol(): string { return this.#parts[2]!; }
      set protocol(value: string) { this.#set("protocol", value); }
      get username(): string { return this.#parts[3]!; }
      set username(value: string) { this.#set("username", value); }
      get password(): string { return this.#parts[4]!; }
      set password(value: string) { this.#set("password", value); }
      get host(): string { return this.#parts[5]!; }
      set host(value: string) { this.#set("host", value); }
      get hostname(): string { return this.#parts[6]!; }
      set hostname(value: string) { this.#set("hostname", value); }
      get port(): string { return this.#parts[7]!; }
      set port(value: string) { this.#set("port", value); }
      get pathname(): string { return this.#parts[8]!; }
      set pathname(value: string) { this.#set("pathname", value); }
      get search(): string { return this.#parts[9]!; }
      set search(value: string) { this.#set("search", value); }
      get hash(): string { return this.#parts[10]!; }
      set hash(value: string) { this.#set("hash", value); }
      get searchParams(): URLSearchParams {
        return this.#params;
      }
      toString(): string {
        return this.#parts[0]!;
      }
      toJSON(): string {
        return this.#parts[0]!;
      }
    }
    return { URLSearchParams, URL };
  }, ["URLSearchParams", "URL"]);
}
