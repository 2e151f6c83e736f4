import { describe, expect, test } from "vitest";
import { addressKind, hostAddress } from "../../src/egress/addresses.ts";
import { cleanUrl } from "../../src/egress/provenance.ts";
import { redactorFor } from "../../src/egress/redaction.ts";
import { matchEntry, readEgress } from "../../src/egress/policy.ts";
import { scanToolUse } from "../../src/telemetry/tool-scan.ts";

describe("address kinds", () => {
  test.each([
    ["8.8.8.8", "public"],
    ["93.184.216.34", "public"],
    ["2606:4700::1111", "public"],
    ["::ffff:8.8.8.8", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["10.0.0.1", "private"],
    ["172.16.5.4", "private"],
    ["172.31.255.255", "private"],
    ["172.32.0.1", "public"],
    ["192.168.1.1", "private"],
    ["fd12:3456::1", "private"],
    ["169.254.169.254", "link-local"],
    ["::ffff:169.254.169.254", "link-local"],
    ["fe80::1", "link-local"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.255", "carrier-grade NAT"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["240.0.0.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["64:ff9b::7f00:1", "reserved"],
    ["2002:7f00:1::", "reserved"],
    ["2001:0:4136:e378::1", "reserved"],
    ["::127.0.0.1", "reserved"],
    ["192.0.2.1", "documentation"],
    ["2001:db8::1", "documentation"],
    ["example.com", "not an IP address"],
  ])("%s is %s", (address, kind) => {
    expect(addressKind(address)).toBe(kind);
  });

  test("a URL's host is an address only when it is an IP literal (brackets off)", () => {
    expect(hostAddress("[::1]")).toBe("::1");
    expect(hostAddress("127.0.0.1")).toBe("127.0.0.1");
    expect(hostAddress("localhost")).toBeUndefined();
  });
});

describe("origins", () => {
  const policy = readEgress({ allow: ["https://example.com", "https://*.wikipedia.org", "http://127.0.0.1:8080", "http://[::1]:9000"] })!;
  test.each([
    ["https://example.com/a?b", "https://example.com"],
    ["https://example.com:443/", "https://example.com"],
    ["https://EXAMPLE.com/", "https://example.com"],
    ["http://example.com/", undefined],
    ["https://example.com:8443/", undefined],
    ["https://sub.example.com/", undefined],
    ["https://en.wikipedia.org/wiki/X", "https://*.wikipedia.org"],
    ["https://a.b.wikipedia.org/", "https://*.wikipedia.org"],
    ["https://wikipedia.org/", undefined],
    ["https://evilwikipedia.org/", undefined],
    ["http://127.0.0.1:8080/", "http://127.0.0.1:8080"],
    ["http://2130706433:8080/", "http://127.0.0.1:8080"],
    ["http://127.0.0.1:8081/", undefined],
    ["http://[::1]:9000/", "http://[::1]:9000"],
    ["http://[::ffff:127.0.0.1]:8080/", undefined],
  ])("%s matches %s", (url, origin) => {
    expect(matchEntry(policy, new URL(url))?.origin).toBe(origin);
  });
});

describe("what records keep of a URL", () => {
  test("no user info, no fragment, secret-looking query values and injected secrets taken out; the rest as written", () => {
    expect(cleanUrl("https://user:pw@example.com/a/b?q=rain%20today&api_key=k1&token=t&X-Amz-Signature=s&author=ann&sig=1#frag")).toBe(
      "https://example.com/a/b?q=rain%20today&api_key=[redacted]&token=[redacted]&X-Amz-Signature=[redacted]&author=ann&sig=[redacted]",
    );
    expect(cleanUrl("https://example.com/p/SECRET-VALUE-1/x", redactorFor([["x-key", "SECRET-VALUE-1"]]))).toBe("https://example.com/p/[redacted]/x");
    expect(cleanUrl(`https://example.com/${"a".repeat(5_000)}`)).toHaveLength(2_000);
    expect(redactorFor([["x-key", "SECRET"]]).redact("a SECRET b secret")).toBe("a [redacted] b [redacted]");
  });
});

describe("the static scan", () => {
  test("a program that calls the fetch it is given uses a tool named fetch; one that declares its own does not", () => {
    expect(scanToolUse("const r = await fetch('https://example.com'); return r.status")).toEqual({ toolAccessDetected: true, toolsReferenced: ["fetch"] });
    expect(scanToolUse("const fetch = (u) => u; return fetch('x')")).toEqual({ toolAccessDetected: false, toolsReferenced: [] });
    expect(scanToolUse("await tools.weather({}); await fetch('x')")).toEqual({ toolAccessDetected: true, toolsReferenced: ["weather", "fetch"] });
    expect(scanToolUse("return 'fetch the tools'")).toEqual({ toolAccessDetected: false, toolsReferenced: [] });
  });
});
