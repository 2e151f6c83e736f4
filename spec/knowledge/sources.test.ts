import { describe, expect, test } from "vitest";
import { fromRetrieval, fromState, literal } from "../../src/index.ts";

const retriever = { search: async () => [] };

describe("knowledge sources refuse options they do not take, at the call", () => {
  test("a misspelled or unknown name is a TypeError naming the valid ones", () => {
    expect(() => fromRetrieval(retriever, { query: "q", topk: 3 } as never)).toThrow(
      new TypeError('Unknown option "topk" for fromRetrieval(). Did you mean "topK"? Valid options: query, name, topK, minRelevance, filter, maxChars, optional, timeoutMs.'),
    );
    expect(() => fromState("x", { optinal: true } as never)).toThrow(new TypeError('Unknown option "optinal" for fromState(). Did you mean "optional"? Valid options: name, maxChars, optional.'));
    expect(() => literal("Be brief.", { nam: "style" } as never)).toThrow(new TypeError('Unknown option "nam" for literal(). Did you mean "name"? Valid options: name, maxChars.'));
  });

  test("options a kind of source has no use for are refused: a literal neither fails nor waits, a state value does not wait", () => {
    expect(() => literal("Be brief.", { optional: true } as never)).toThrow('Unknown option "optional" for literal(). Valid options: name, maxChars.');
    expect(() => fromState("x", { timeoutMs: 100 } as never)).toThrow('Unknown option "timeoutMs" for fromState(). Valid options: name, maxChars, optional.');
  });

  test("options that are not an object, and values of the wrong type, say what they are", () => {
    expect(() => fromState("x", "plan" as never)).toThrow(new TypeError('The options of fromState() must be an object, got the string "plan".'));
    expect(() => literal("x", [] as never)).toThrow(new TypeError("The options of literal() must be an object, got an array."));
    expect(() => fromRetrieval(retriever, { query: "q", optional: "yes" } as never)).toThrow(new TypeError('fromRetrieval() option "optional" must be true or false; got the string "yes".'));
    expect(() => fromRetrieval(retriever, { query: "q", filter: "x" } as never)).toThrow('fromRetrieval option "filter" must be an object of metadata values; got the string "x".');
  });

  test("the options each takes are accepted", () => {
    expect(fromState("customer.plan", { name: "plan", maxChars: 100, optional: true })).toMatchObject({ kind: "state", name: "plan", maxChars: 100, optional: true });
    expect(fromRetrieval(retriever, { query: "q", name: "kb", topK: 3, minRelevance: 0.5, filter: { a: "b" }, maxChars: 100, optional: true, timeoutMs: 50 })).toMatchObject({ kind: "retrieval", topK: 3, timeoutMs: 50 });
    expect(literal("Be brief.", { name: "style", maxChars: 5 })).toMatchObject({ kind: "literal", name: "style" });
    expect(literal("Be brief.")).toMatchObject({ kind: "literal", optional: false });
  });
});
