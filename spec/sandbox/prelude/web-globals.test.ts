/**
 * The web globals programs have (atob, btoa, TextEncoder, TextDecoder, URLSearchParams, URL),
 * run in the real sandbox: they behave as Node's own do, are frozen like every intrinsic, cannot be
 * replaced for a later program, and bad or hostile input is a clear error in the program.
 */
import { describe, expect, test } from "vitest";
import { agentWith } from "../../../test-support/agents.ts";

async function run(program: string): Promise<unknown> {
  const { agent } = agentWith({ go: program });
  const outcome = await agent.go();
  if (!outcome.ok) throw new Error(`${outcome.errorType}: ${outcome.errorMessage}`);
  return outcome.value;
}

describe("web globals in programs", () => {
  test("atob and btoa round-trip Latin-1 and refuse what they cannot take, as browsers do", async () => {
    const latin = "Grüße, ÿ\u0000!";
    expect(await run(`return [btoa(${JSON.stringify(latin)}), atob(btoa(${JSON.stringify(latin)})), atob(" aGk= "), atob("aGk")]`)).toEqual([Buffer.from(latin, "latin1").toString("base64"), latin, "hi", "hi"]);
    expect(await run("try { btoa('☃') } catch (e) { return [e.name, e.message] }")).toEqual(["InvalidCharacterError", "btoa: the string has a character outside Latin-1; encode it first (e.g. with TextEncoder)."]);
    expect(await run("try { atob('a$b') } catch (e) { return e.name }")).toBe("InvalidCharacterError");
  });

  test("TextEncoder and TextDecoder are UTF-8, as Node's: lone surrogates, invalid bytes, BOM and fatal mode", async () => {
    const text = "héllo ☃ 𝄞 \ud800!";
    const bytes = [...new TextEncoder().encode(text)];
    const value = (await run(`const bytes = new TextEncoder().encode(${JSON.stringify(text)});
      return { bytes: [...bytes], back: new TextDecoder().decode(bytes), enc: new TextEncoder().encoding,
        bad: new TextDecoder().decode(new Uint8Array([0x61, 0xff, 0xe2, 0x82, 0x62, 0xed, 0xa0, 0x80])),
        bom: new TextDecoder().decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])), kept: new TextDecoder("utf8", { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])),
        fatal: (() => { try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xc3])) } catch (e) { return e.name } })(),
        latin: (() => { try { new TextDecoder("latin1") } catch (e) { return e.name } })() }`)) as Record<string, unknown>;
    const bad = new Uint8Array([0x61, 0xff, 0xe2, 0x82, 0x62, 0xed, 0xa0, 0x80]);
    expect(value).toEqual({
      bytes,
      back: new TextDecoder().decode(new TextEncoder().encode(text)),
      enc: "utf-8",
      bad: new TextDecoder().decode(bad),
      bom: "A",
      kept: "\ufeffA",
      fatal: "TypeError",
      latin: "RangeError",
    });
  });

  test("URL parses with Node's own parser: parts, a base, setters, searchParams kept in step, canParse and parse", async () => {
    const value = (await run(`const u = new URL("../b/c?x=1&y=a+b#frag", "https://user:pw@example.com:8443/a/z");
      const parts = { href: u.href, origin: u.origin, protocol: u.protocol, username: u.username, host: u.host, hostname: u.hostname, port: u.port, pathname: u.pathname, search: u.search, hash: u.hash };
      const y = u.searchParams.get("y");
      u.searchParams.append("q", "a b&c");
      const afterAppend = u.href;
      u.search = "?k=v";
      const k = u.searchParams.get("k");
      u.pathname = "/new path";
      u.port = "443";
      return { parts, y, afterAppend, k, final: String(u), json: JSON.stringify({ u }), can: [URL.canParse("nope"), URL.canParse("/x", "http://h")], parsed: URL.parse("::") }`)) as Record<string, unknown>;
    const expected = new URL("../b/c?x=1&y=a+b#frag", "https://user:pw@example.com:8443/a/z");
    const parts = { href: expected.href, origin: expected.origin, protocol: expected.protocol, username: expected.username, host: expected.host, hostname: expected.hostname, port: expected.port, pathname: expected.pathname, search: expected.search, hash: expected.hash };
    expected.searchParams.append("q", "a b&c");
    const afterAppend = expected.href;
    expected.search = "?k=v";
    expected.pathname = "/new path";
    expected.port = "443";
    expect(value).toEqual({ parts, y: "a b", afterAppend, k: "v", final: expected.href, json: JSON.stringify({ u: expected.href }), can: [false, true], parsed: null });
  });

  test("URLSearchParams reads and writes form encoding as Node's does", async () => {
    const init = "a=1&b=x+y&a=2&c=%E2%98%83&d&=e&bad=%ZZ";
    const value = (await run(`const p = new URLSearchParams(${JSON.stringify(init)});
      const got = [p.getAll("a"), p.get("b"), p.get("c"), p.get("d"), p.get(""), p.get("bad"), p.has("a", "2"), p.size];
      p.set("a", "3"); p.delete("b"); p.sort();
      return { got, text: p.toString(), fromObject: new URLSearchParams({ k: "v w", "ü": "!'()~*" }).toString(), fromPairs: [...new URLSearchParams([["x", "1"], ["y", "2"]]).keys()] }`)) as Record<string, unknown>;
    const p = new URLSearchParams(init);
    const got = [p.getAll("a"), p.get("b"), p.get("c"), p.get("d"), p.get(""), p.get("bad"), p.has("a", "2"), p.size];
    p.set("a", "3");
    p.delete("b");
    p.sort();
    expect(value).toEqual({ got, text: p.toString(), fromObject: new URLSearchParams({ k: "v w", ü: "!'()~*" }).toString(), fromPairs: ["x", "y"] });
  });

  test("bad and hostile input is a clear error in the program; the globals are frozen and a program cannot replace them for the next", async () => {
    expect(await run(`try { new URL("not a url") } catch (e) { return [e.name, e.message] }`)).toEqual(["TypeError", 'Invalid URL: "not a url"']);
    expect(await run(`try { new URL("http://h/" + "x".repeat(100000)) } catch (e) { return e.message }`)).toBe("Invalid URL: the URL is longer than 65536 characters.");
    expect(await run(`const u = new URL("http://h/"); try { u.href = "::" } catch (e) { return [e.name, u.href] }`)).toEqual(["TypeError", "http://h/"]);
    expect(await run(`return [Object.isFrozen(URL), Object.isFrozen(URL.prototype), Object.isFrozen(TextEncoder.prototype), Object.isFrozen(URLSearchParams.prototype)]`)).toEqual([true, true, true, true]);
    const { agent } = agentWith({
      tamper: `try { globalThis.URL = function () { return { href: "evil" } } } catch {} try { URL.prototype.toString = () => "evil" } catch {} try { btoa = () => "evil" } catch {} return 1`,
      use: `return [new URL("http://h/p").toString(), btoa("a"), typeof URL.canParse]`,
    });
    expect((await agent.tamper()).ok).toBe(true);
    expect((await agent.use()).value).toEqual(["http://h/p", "YQ==", "function"]);
    // A URL whose text comes from a program's object runs that object's code in the sandbox, bounded like any program.
    const { agent: looping } = agentWith({ go: `return new URL({ toString() { while (true) {} } })` }, { executionTimeoutMs: 300 });
    expect((await looping.go()).errorType).toBe("timeout");
  });
});
