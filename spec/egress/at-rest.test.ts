import { describe, expect, test } from "vitest";
import { redactData, redactEncoded } from "../../src/egress/at-rest.ts";
import { redactorFor, redactorOfAll } from "../../src/egress/redaction.ts";
import { decodeValue } from "../../src/sandbox/value-codec.ts";

const TOKEN = "Zq8xKp4vWm2xYv7RtN3bLc6H";
const redactor = redactorFor([["authorization", `Bearer ${TOKEN}`]]);

describe("redactData: JSON data improv writes", () => {
  test("strings and keys lose every copy; parts that hold none are the same objects", () => {
    const clean = { a: [1, "two"], b: { c: "three" } };
    const data = { clean, dirty: [`key=${TOKEN}`, { [TOKEN]: TOKEN.toLowerCase() }], count: 3 };
    const redacted = redactData(data, redactor);
    expect(redacted).toEqual({ clean, dirty: ["key=[redacted]", { "[redacted]": "[redacted]" }], count: 3 });
    expect(redacted.clean).toBe(clean);
    expect(redactData(clean, redactor)).toBe(clean);
  });

  test("a __proto__ key stays an own key and changes no prototype", () => {
    const data = JSON.parse(`{"__proto__": {"polluted": "${TOKEN}"}}`) as Record<string, unknown>;
    const redacted = redactData(data, redactor);
    expect(Object.getPrototypeOf(redacted)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(redacted, "__proto__")?.value).toEqual({ polluted: "[redacted]" });
  });

  test("a whole number spelling a credential of digits becomes [redacted]; short and fractional numbers are not looked at", () => {
    const digits = redactorFor([["x-pin", "86753091122334"]]);
    expect(redactData([86753091122334, 8675309, 12.5, 42], digits)).toEqual(["[redacted]", 8675309, 12.5, 42]);
  });
});

/** A value as the sandbox's encoder would write it. */
const encoded = (nodes: unknown[], root = 0) => JSON.stringify({ root, nodes });

describe("redactEncoded: values and contexts as the sandbox encodes them", () => {
  test("text that holds no copy is returned as it is", () => {
    const text = encoded([{ a: 1, b: 2 }, "plain", ["Date", "2025-01-01T00:00:00.000Z"]]);
    expect(redactEncoded(text, redactor)).toBe(text);
  });

  test("strings, keys and error messages are redacted in place; a RegExp, BigInt or bytes holding a copy become [redacted]", () => {
    const hex = Buffer.from(TOKEN).toString("hex");
    const text = encoded([{ [TOKEN]: 1, error: 2, pattern: 3, bytes: 4, map: 5 }, `x${TOKEN}`, ["Error", "TypeError", `bad ${TOKEN}`], ["RegExp", TOKEN, "g"], ["Bytes", "Uint8Array", hex], ["Map", 1, 1]]);
    const value = decodeValue(redactEncoded(text, redactor), 10_000) as Record<string, unknown>;
    expect(value["[redacted]"]).toBe("x[redacted]");
    expect(value.error).toBeInstanceOf(TypeError);
    expect((value.error as Error).message).toBe("bad [redacted]");
    expect(value.pattern).toBe("[redacted]");
    expect(value.bytes).toBe("[redacted]");
    expect(value.map).toEqual(new Map([["x[redacted]", "x[redacted]"]]));
  });

  test("a handed-back agent whose role holds a copy is [redacted], not an agent", () => {
    const text = encoded([["Agent", `helper-${TOKEN}`, null]]);
    expect(decodeValue(redactEncoded(text, redactor), 10_000)).toBe("[redacted]");
  });
});

describe("redactorOfAll: a call tree whose agents have policies of their own", () => {
  test("takes out what each policy's redactor does; one or none is itself", () => {
    const other = redactorFor([["x-api-key", "Other-Key-98765432"]]);
    const both = redactorOfAll([redactor, other]);
    expect(both.redact(`${TOKEN} and Other-Key-98765432`)).toBe("[redacted] and [redacted]");
    expect(redactorOfAll([redactor])).toBe(redactor);
    expect(redactorOfAll([]).active).toBe(false);
  });
});
