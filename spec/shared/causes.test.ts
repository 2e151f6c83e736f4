import { describe, expect, test } from "vitest";
import { causesOf, errorCode, innermostError } from "../../src/shared/index.ts";
import { causeText } from "../../src/tools/mcp-connection.ts";

const coded = (message: string, code: string) => Object.assign(new Error(message), { code });

describe("walking an error's causes", () => {
  test("each cause in turn, outermost first, with an AggregateError's errors after it", () => {
    const refused = [coded("connect ECONNREFUSED ::1:9", "ECONNREFUSED"), coded("connect ECONNREFUSED 127.0.0.1:9", "ECONNREFUSED")];
    const gathered = new AggregateError(refused, "");
    const fetchFailed = new TypeError("fetch failed", { cause: gathered });
    const wrapped = new Error("Connection error.", { cause: fetchFailed });
    expect(causesOf(wrapped)).toEqual([wrapped, fetchFailed, gathered, ...refused]);
    expect(innermostError(wrapped)).toBe(refused[0]);
    expect(errorCode(innermostError(wrapped))).toBe("ECONNREFUSED");
  });

  test("a cause that is no Error ends the walk and is kept; a cycle or a deep chain ends at the depth asked", () => {
    const odd = new Error("outer", { cause: "a string cause" });
    expect(causesOf(odd)).toEqual([odd, "a string cause"]);
    expect(innermostError(odd)).toBe(odd);
    const looped = new Error("looped");
    looped.cause = looped;
    expect(causesOf(looped, 5)).toHaveLength(5);
    expect(innermostError(looped, 5)).toBe(looped);
    let deep: Error = new Error("0");
    for (let i = 1; i < 10_000; i++) deep = new Error(String(i), { cause: deep });
    expect(causesOf(deep)).toHaveLength(8);
    expect(causesOf(undefined)).toEqual([]);
  });

  test("an AggregateError gathering thousands is looked at for its first few only, and a code that is no string is none", () => {
    const many = new AggregateError(Array.from({ length: 10_000 }, (_, i) => new Error(String(i))));
    expect(causesOf(many)).toHaveLength(1 + 8);
    expect(errorCode(Object.assign(new Error("x"), { code: 42 }))).toBeUndefined();
    expect(errorCode(null)).toBeUndefined();
  });
});

describe("an MCP failure's text", () => {
  test("a cause that cannot be made text (no prototype, a message getter that throws) is left out, and the text still comes", () => {
    const unreadable = Object.create(null) as object;
    const throwing = Object.defineProperty(new Error(), "message", { get: () => { throw new Error("no"); } });
    const failure = new Error("fetch failed", { cause: new AggregateError([unreadable, throwing, new Error("connect ECONNREFUSED")], "") });
    expect(causeText(failure)).toBe("fetch failed: connect ECONNREFUSED");
    expect(causeText(unreadable)).toBe("unknown error");
  });
});
