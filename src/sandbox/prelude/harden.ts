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
 */
export function hardenRealm(): void {
  "use strict";
  const g = globalThis as Record<string, unknown>;
  const { freeze, getOwnPropertyDescriptor, getPrototypeOf, defineProperty, isFrozen } = Object;
  const ownKeys = Reflect.ownKeys;

  for (const name of ["SharedArrayBuffer", "Atomics", "WebAssembly", "FinalizationRegistry", "WeakRef"]) {
    delete g[name];
  }

  const hasOwnProperty = Object.prototype.hasOwnProperty;
  function enableOverride(target: object, key: PropertyKey): void {
    const descriptor = getOwnPropertyDescriptor(target, key);
    if (!descriptor || !("value" in descriptor) || !descriptor.configurable) return;
    const value = descriptor.value;
    defineProperty(target, key, {
      get: function getIntrinsic() {
        return value;
      },
      set: function setOwnProperty(this: object, next: unknown) {
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

  // Iterative deep freeze, so deep intrinsic graphs cannot overflow the stack.
  const pending: unknown[] = [...hidden];
  for (const key of ownKeys(g)) {
    const descriptor = getOwnPropertyDescriptor(g, key);
    if (!descriptor) continue;
    if ("value" in descriptor) pending.push(descriptor.value);
    else pending.push(descriptor.get, descriptor.set);
    if (descriptor.configurable) {
      defineProperty(g, key, "value" in descriptor ? { writable: false, configurable: false } : { configurable: false });
    }
  }
  const visited = new Set<unknown>();
  while (pending.length > 0) {
    const value = pending.pop();
    if ((typeof value !== "object" && typeof value !== "function") || value === null || value === g) continue;
    if (visited.has(value)) continue;
    visited.add(value);
    if (!isFrozen(value)) freeze(value);
    pending.push(getPrototypeOf(value));
    for (const key of ownKeys(value)) {
      const descriptor = getOwnPropertyDescriptor(value, key);
      if (!descriptor) continue;
      if ("value" in descriptor) pending.push(descriptor.value);
      else pending.push(descriptor.get, descriptor.set);
    }
  }
}
