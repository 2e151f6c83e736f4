import { describe, expect, test } from "vitest";
import { redactorFor } from "../../src/egress/redaction.ts";

const TOKEN = "Zq8/Kp4+Wm2xYv7RtN3bLc6H";

describe("redactorFor: every recognizable copy of an injected value", () => {
  test("a Basic credential's user and password, decoded, are looked for too", () => {
    const redactor = redactorFor([["authorization", `Basic ${Buffer.from("alice:correct-horse-battery").toString("base64")}`]]);
    expect(redactor.redact("user alice, password CORRECT-HORSE-BATTERY")).toBe("user alice, password [redacted]");
    expect(redactor.redact("yrettab-esroh-tcerroc")).toBe("[redacted]");
  });

  test("text holding no copy comes back as the same string; a value under 6 characters is not looked for", () => {
    const redactor = redactorFor([["authorization", `Bearer ${TOKEN}`], ["x-short", "abcde"]]);
    const text = "plain text, abcde, Bearer of news, 12345678";
    expect(redactor.redact(text)).toBe(text);
    expect(redactorFor([["x-short", "abcde"]]).active).toBe(false);
  });

  test("copies next to each other become one [redacted]; text between them stays", () => {
    const redactor = redactorFor([["x-api-key", TOKEN]]);
    expect(redactor.redact(`${TOKEN}${TOKEN.toLowerCase()} and ${TOKEN.slice(3, 13)}!`)).toBe("[redacted] and [redacted]!");
  });

  test("every copy in a 5 MB body is taken out, wherever it falls, and nothing else", () => {
    const redactor = redactorFor([["authorization", `Bearer ${TOKEN}`]]);
    const filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit ".repeat(9_000);
    const forms = [TOKEN, TOKEN.toUpperCase(), [...TOKEN].reverse().join(""), Buffer.from(TOKEN).toString("hex"), encodeURIComponent(TOKEN), TOKEN.slice(5, 15)];
    const body = forms.map((form) => filler + form).join("") + filler;
    expect(body.length).toBeGreaterThan(3_000_000);
    expect(redactor.redact(body)).toBe(forms.map(() => `${filler}[redacted]`).join("") + filler);
  });

  test("text whose lower case is longer (İ) keeps its indices: the copy after it is found and cut exactly", () => {
    const redactor = redactorFor([["x-api-key", TOKEN]]);
    expect(redactor.redact(`İstanbul ${TOKEN.toUpperCase()} end`)).toBe("İstanbul [redacted] end");
  });
});
