import { describe, expect, test } from "vitest";
import { Agent, kw, ScriptedProvider } from "../../src/index.ts";
import type { GenerationRequest } from "../../src/index.ts";

const signal = new AbortController().signal;

function request(method: string, role = "calculator", attempt = 1): GenerationRequest {
  return { role, method, attempt, system: "sys", user: "usr" };
}

describe("ScriptedProvider", () => {
  test("answers a method key with its program", async () => {
    const provider = new ScriptedProvider({ programs: { add: "return args[0] + args[1]" } });
    expect(await provider.generate(request("add"), signal)).toEqual({ code: "return args[0] + args[1]", model: "scripted" });
  });

  test("a role-qualified key wins over a plain method key", async () => {
    const provider = new ScriptedProvider({ programs: { answer: "return 1", "calculator.answer": "return 42" } });
    expect((await provider.generate(request("answer"), signal)).code).toBe("return 42");
    expect((await provider.generate(request("answer", "oracle"), signal)).code).toBe("return 1");
  });

  test("an array is consumed one entry per request and its last entry repeats", async () => {
    const provider = new ScriptedProvider({ programs: { answer: [null, "", "return 1", "return 2"] } });
    const codes = [];
    for (let i = 0; i < 6; i += 1) codes.push((await provider.generate(request("answer"), signal)).code);
    expect(codes).toEqual([null, "", "return 1", "return 2", "return 2", "return 2"]);
  });

  test("{ error } is a provider failure with that message", async () => {
    const provider = new ScriptedProvider({ programs: { add: { error: "rate limited" } } });
    await expect(provider.generate(request("add"), signal)).rejects.toThrow("rate limited");
  });

  test("{ delayMs, code } answers after the delay and stops when aborted", async () => {
    const provider = new ScriptedProvider({ programs: { slow: { delayMs: 20, code: "return 1" } } });
    expect((await provider.generate(request("slow"), signal)).code).toBe("return 1");
    const controller = new AbortController();
    const pending = provider.generate(request("slow"), controller.signal);
    controller.abort(new Error("stop"));
    await expect(pending).rejects.toThrow("stop");
  });

  test("programs may be a function of the request", async () => {
    const provider = new ScriptedProvider({ programs: (r) => `return ${JSON.stringify(`${r.role}.${r.method}#${r.attempt}`)}` });
    expect((await provider.generate(request("x", "r", 2), signal)).code).toBe('return "r.x#2"');
  });

  test("a request with no matching program is a provider failure naming the missing key", async () => {
    const provider = new ScriptedProvider({ programs: { add: "return 1" } });
    await expect(provider.generate(request("sub"), signal)).rejects.toThrow(
      'ScriptedProvider has no program for "calculator.sub" or "sub". Add one of these keys to its programs.',
    );
  });

  test("calls lists every request with role, method, attempt, system and user", async () => {
    const provider = new ScriptedProvider({ programs: { add: [null, "return 1"] } });
    const calc = Agent.for("calculator", { provider });
    await calc.add(1);
    expect(provider.calls.map(({ role, method, attempt }) => ({ role, method, attempt }))).toEqual([
      { role: "calculator", method: "add", attempt: 1 },
      { role: "calculator", method: "add", attempt: 2 },
    ]);
    expect(provider.calls[0]?.system).toContain("context.conversation_history");
    expect(provider.calls[0]?.user).toContain("Method: add");
  });

  test("a missing program ends the call with a provider outcome", async () => {
    const calc = Agent.for("calculator", { provider: new ScriptedProvider({ programs: {} }) });
    const r = await calc.add(1);
    expect(r.errorType).toBe("provider");
    expect(r.errorMessage).toBe('The provider failed: ScriptedProvider has no program for "calculator.add" or "add". Add one of these keys to its programs.');
  });

  test("bad construction is a TypeError", () => {
    expect(() => new ScriptedProvider({} as never)).toThrow(TypeError);
  });

  test("bad entries are a TypeError at construction naming the key, not a provider failure at every call", () => {
    expect(() => new ScriptedProvider({ programs: { add: 42 as never } })).toThrow('ScriptedProvider program "add" must be a program string, null, "", { error }, { code, delayMs?, usage? }, a list of these, or a function (request) => entry; got the number 42.');
    expect(() => new ScriptedProvider({ programs: { add: ["return 1", { delayMs: -1, code: "x" }] as never } })).toThrow('ScriptedProvider program "add"');
    expect(() => new ScriptedProvider({ programs: { add: { program: "return 1" } as never } })).toThrow('ScriptedProvider program "add"');
    expect(() => new ScriptedProvider({ programs: { add: { error: "busy", kind: "overloaded" } as never } })).toThrow('ScriptedProvider program "add"');
    expect(() => new ScriptedProvider({ programs: { add: { code: "return 1", usage: 5 } as never } })).toThrow('ScriptedProvider program "add"');
    expect(() => new ScriptedProvider({ programs: {}, nmae: "x" } as never)).toThrow('Unknown option "nmae" for new ScriptedProvider(). Did you mean "name"? Valid options: programs, model, name, maxConcurrentRequests.');
  });

  test("an entry with a key it does not take is a TypeError naming the valid keys, not a key silently ignored", async () => {
    expect(() => new ScriptedProvider({ programs: { add: { code: "return 1", delay: 1000 } as never } })).toThrow(
      new TypeError('Unknown key "delay" for ScriptedProvider program "add". Did you mean "delayMs"? Valid keys: code, delayMs, usage.'),
    );
    expect(() => new ScriptedProvider({ programs: { add: ["return 1", { error: "busy", retryAfter: 5 }] as never } })).toThrow(
      new TypeError('Unknown key "retryAfter" for ScriptedProvider program "add". Did you mean "retryAfterMs"? Valid keys: error, kind, retryAfterMs.'),
    );
    expect(() => new ScriptedProvider({ programs: { add: { error: "busy", code: "return 1" } as never } })).toThrow('Unknown key "code" for ScriptedProvider program "add".');
    // An entry a function picks is read at the request: a provider failure that says the same.
    const calc = Agent.for("calculator", { provider: new ScriptedProvider({ programs: { add: () => ({ code: "return 1", delay: 1000 }) as never } }), maxGenerationAttempts: 1 });
    const outcome = await calc.add();
    expect(outcome.errorType).toBe("provider");
    expect(outcome.errorMessage).toContain('Unknown key "delay" for a ScriptedProvider entry. Did you mean "delayMs"?');
  });

  test("one method's program may be a function of the request; requests carry the call's args, kwargs, attempt and feedback", async () => {
    const provider = new ScriptedProvider({
      programs: {
        scale: (r) => (r.attempt === 1 ? "return notDefined" : `return args[0] * ${JSON.stringify(r.kwargs?.by ?? 1)}`),
        other: "return 'other'",
      },
    });
    const calc = Agent.for("calculator", { provider });
    expect((await calc.scale(3, kw({ by: 4 }))).value).toBe(12);
    expect((await calc.other()).value).toBe("other");
    const [first, second] = provider.calls;
    expect(first).toMatchObject({ method: "scale", attempt: 1, args: [3], kwargs: { by: 4 }, feedback: undefined });
    expect(second).toMatchObject({ method: "scale", attempt: 2, args: [3], kwargs: { by: 4 }, feedback: { code: "return notDefined", error: expect.stringContaining("notDefined is not defined") } });
  });
});
