/**
 * Runs inside the isolate, once, before any generated code: removes dangerous globals and
 * freezes every intrinsic reachable from the global object, the way hardened-JavaScript
 * environments do. The function is sent to the isolate as source text, so it must not use
 * anything from its module scope.
 *
 * The "override mistake": once `Object.prototype` is frozen, `obj.toString = f` fails
 * because the inherited property is read-only. For the properties programs commonly assign
 * on their own objects (an Error subclass setting `this.name`, a class defining `toString`),
 * the data property is replaced by an accessor whose setter defines an own property on the
 * receiver instead, so such assignments keep working while the intrinsic stays unchanged.
 *
 * Answers with the function that seeds `Math.random` anew (see below), for the runtime alone.
 */
export function hardenRealm(): (seed: readonly number[]) => void {
  "use strict";
  const g = globalThis as Record<string, unknown>;
  const { freeze, getOwnPropertyDescriptor, getPrototypeOf, defineProperty } = Object;
  const ownKeys = Reflect.ownKeys;

  for (const name of ["SharedArrayBuffer", "Atomics", "WebAssembly", "FinalizationRegistry", "WeakRef"]) {
    delete g[name];
  }

  // Math.random from a generator of the runtime's own (xoshiro128**), which the returned function
  // seeds anew: an isolate may serve another agent after its own is gone, and the engine's
  // generator can be run backwards from a few of its outputs to the numbers drawn before.
  const imul = Math.imul;
  const engineRandom = Math.random;
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const next = (): number => {
    const result = imul(((imul(s1, 5) << 7) | (imul(s1, 5) >>> 25)), 9) >>> 0;
    const shifted = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= shifted;
    s3 = (s3 << 11) | (s3 >>> 21);
    return result;
  };
  const reseed = (seed: readonly number[]): void => {
    s0 = seed[0]! | 0;
    s1 = seed[1]! | 0;
    s2 = seed[2]! | 0;
    s3 = seed[3]! | 0;
    // An all-zero state would only ever give zeros.
    if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
  };
  reseed([0, 1, 2, 3].map(() => (engineRandom() * 2 ** 32) >>> 0));
  // A method: no `prototype` object, and `new Math.random()` throws as it does for the engine's.
  const { random } = {
    random(): number {
      return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
    },
  };
  defineProperty(Math, "random", { value: random, writable: true, enumerable: false, configurable: true });

  const hasOwnProperty = Object.prototype.hasOwnProperty;
  function enableOverride(target: object, key: PropertyKey): void {
    const descriptor = getOwnPropertyDescriptor(target, key);
    if (!descriptor || !("value" in descriptor) || !descriptor.configurable) return;
    const value = descriptor.value;
    // Methods, not function expressions: they have no `prototype` object for the walk to freeze.
    defineProperty(target, key, {
      get() {
        return value;
      },
      set(this: object, next: unknown) {
        if (this === target) {
          throw new TypeError(`Cannot assign to read only property '${String(key)}' of a frozen built-in`);
        }
        if (Reflect.apply(hasOwnProperty, this, [key])) {
          (this as Record<PropertyKey, unknown>)[key] = next;
        } else {
          defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true });
        }
      },
      enumerable: descriptor.enumerable ?? false,
      configurable: false,
    });
  }

  const errorConstructors = [Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError, AggregateError];
  for (const key of ownKeys(Object.prototype)) enableOverride(Object.prototype, key);
  for (const ctor of errorConstructors) {
    for (const key of ["constructor", "name", "message", "toString"]) enableOverride(ctor.prototype, key);
  }
  for (const key of ["constructor", "toString", "apply", "bind", "call"]) enableOverride(Function.prototype, key);
  for (const key of ["constructor", "toString", "push", "join"]) enableOverride(Array.prototype, key);
  for (const key of ["constructor", "then", "catch", "finally"]) enableOverride(Promise.prototype, key);
  for (const ctor of [String, Number, Boolean, Symbol, Date, RegExp, Map, Set]) {
    for (const key of ["constructor", "toString", "valueOf"]) enableOverride(ctor.prototype, key);
  }

  // Intrinsics that no global names directly.
  const hidden: unknown[] = [
    getPrototypeOf(async function () {}),
    getPrototypeOf(function* () {}),
    getPrototypeOf(async function* () {}),
    getPrototypeOf([][Symbol.iterator]()),
    getPrototypeOf(new Map().entries()),
    getPrototypeOf(new Set().values()),
    getPrototypeOf(""[Symbol.iterator]()),
    getPrototypeOf("a".matchAll(/a/g)),
    getPrototypeOf(Uint8Array),
    getPrototypeOf((function* () {})()),
    getPrototypeOf((async function* () {})()),
  ];
  const iteratorHelper = (g.Iterator as { from?: (value: unknown) => { map(fn: unknown): unknown } } | undefined)?.from;
  if (typeof iteratorHelper === "function") {
    const iterator = iteratorHelper([]);
    hidden.push(getPrototypeOf(iterator.map((x: unknown) => x)), getPrototypeOf(iterator));
  }
  // More that only an instance reaches, each where the engine has it: the wrapper Iterator.from
  // puts around an object that is not an iterator of its own, Intl.Segmenter's segments and their
  // iterator, and the accessor behind every error's `stack`.
  const instances: (() => unknown[])[] = [
    () => [getPrototypeOf((g.Iterator as { from(value: unknown): unknown }).from({ next: () => ({ done: true, value: undefined }) }))],
    () => {
      const segments = new Intl.Segmenter("en").segment("x");
      return [getPrototypeOf(segments), getPrototypeOf(segments[Symbol.iterator]())];
    },
    () => {
      const stack = getOwnPropertyDescriptor(new Error("x"), "stack");
      return stack === undefined ? [] : [stack.get, stack.set];
    },
  ];
  for (const make of instances) {
    try {
      hidden.push(...make());
    } catch {
      // Not in this engine.
    }
  }
  // The global object stays open (programs add globals, removed between calls), but not what it inherits from.
  hidden.push(getPrototypeOf(g));

  // Iterative deep freeze, so deep intrinsic graphs cannot overflow the stack. A value is queued
  // once, when first seen: this runs once per isolate, in the interpreter, so fewer steps count.
  const visited = new Set<unknown>([g]);
  const pending: unknown[] = [];
  const queue = (value: unknown): void => {
    if (((typeof value === "object" && value !== null) || typeof value === "function") && !visited.has(value)) {
      visited.add(value);
      pending.push(value);
    }
  };
  for (const value of hidden) queue(value);
  for (const key of ownKeys(g)) {
    const descriptor = getOwnPropertyDescriptor(g, key);
    if (!descriptor) continue;
    if ("value" in descriptor) queue(descriptor.value);
    else {
      queue(descriptor.get);
      queue(descriptor.set);
    }
    if (descriptor.configurable) {
      defineProperty(g, key, "value" in descriptor ? { writable: false, configurable: false } : { configurable: false });
    }
  }
  while (pending.length > 0) {
    const value = pending.pop() as object;
    freeze(value);
    queue(getPrototypeOf(value));
    for (const key of ownKeys(value)) {
      const descriptor = getOwnPropertyDescriptor(value, key);
      if (!descriptor) continue;
      if ("value" in descriptor) queue(descriptor.value);
      else {
        queue(descriptor.get);
        queue(descriptor.set);
      }
    }
  }
  return reseed;
}
