/**
 * The egress normaliser. Runs inside the isolate (sent as source text, so it must not use
 * anything from its module scope) and turns any value a program produces into one JSON
 * string in the format `src/sandbox/value-codec.ts` decodes:
 *
 *   { "root": ref, "nodes": [node, ...] }
 *
 * A ref is an index into `nodes`, or a negative constant: -1 undefined, -2 array hole,
 * -3 NaN, -4 Infinity, -5 -Infinity, -6 -0. A node is a JSON primitive; an array of refs (a
 * plain array); an object of refs (a plain object); or a tagged array whose first item is a
 * string: ["Date", iso|null], ["BigInt", digits], ["Map", k, v, ...], ["Set", v, ...],
 * ["RegExp", source, flags], ["Error", name, message], ["Bytes", kind, hex], ["StandIn", text]
 * for what can only be written as text, and, from an
 * encoder given `agentOf`, ["Agent", role, options|null] for an agent the runtime made with
 * `delegate` (only the runtime can say so: no data a program makes is written as this tag).
 *
 * Every object is visited once, so cycles and shared references cost nothing extra (no
 * "billion laughs" blow-up). Functions, symbols, promises and weak collections become
 * stand-ins (`[Function: f]`, `[Promise]`), as does a field whose getter or proxy trap threw;
 * `__proto__` keys are dropped. The output is bounded by `maxChars`, counted as the
 * text it writes (each node, each reference, escapes included): past it, encoding throws an
 * error named `ResultTooLarge`.
 *
 * `ownData` is the caller's promise that the value is an object of its own making, with a null
 * prototype and data properties only (the runtime's snapshot of `context`): when its values
 * are all plain primitives it is written at once, as the graph walk would write it.
 */
export function createEncoder(agentOf?: (object: object) => readonly [role: string, options: string | null] | undefined): (value: unknown, maxChars: number, ownData?: boolean) => string {
  "use strict";
  const { keys, getOwnPropertyDescriptor, getPrototypeOf, create } = Object;
  const apply = Reflect.apply;
  // What `read` gives for a property it could not read, or whose getter threw: written as a stand-in.
  const GETTER_THREW = create(null) as object;
  const UNREADABLE_PROPERTY = create(null) as object;
  const isArray = Array.isArray;
  const stringify = JSON.stringify;
  const dateGetTime = Date.prototype.getTime;
  const dateToISOString = Date.prototype.toISOString;
  const mapSize = getOwnPropertyDescriptor(Map.prototype, "size")?.get as () => number;
  const setSize = getOwnPropertyDescriptor(Set.prototype, "size")?.get as () => number;
  const mapEntries = Map.prototype.entries;
  const setValues = Set.prototype.values;
  const regexpSource = getOwnPropertyDescriptor(RegExp.prototype, "source")?.get as () => string;
  const regexpFlags = getOwnPropertyDescriptor(RegExp.prototype, "flags")?.get as () => string;
  const arrayBufferByteLength = getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")?.get as () => number;
  const TypedArrayPrototype = getPrototypeOf(Uint8Array.prototype) as object;
  const typedArrayTag = getOwnPropertyDescriptor(TypedArrayPrototype, Symbol.toStringTag)?.get as () => string | undefined;
  const isView = ArrayBuffer.isView;
  const bigintToString = BigInt.prototype.toString;
  const symbolDescription = getOwnPropertyDescriptor(Symbol.prototype, "description")?.get as () => string | undefined;
  const PromiseCtor = Promise;
  const weakMapHas = WeakMap.prototype.has;
  const weakSetHas = WeakSet.prototype.has;
  const ErrorCtor = Error;
  const ObjectPrototype = Object.prototype;
  const StringCtor = String;
  const Uint8ArrayCtor = Uint8Array;
  const MapCtor = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapIteratorNext = getPrototypeOf(new Map().entries()).next as () => IteratorResult<[unknown, unknown]>;
  const setIteratorNext = getPrototypeOf(new Set().values()).next as () => IteratorResult<unknown>;
  const HEX = "0123456789abcdef";
  const regexpTest = RegExp.prototype.test;
  // Characters JSON writes as more than one character: quotes, backslashes, controls, lone surrogates.
  const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

  /** What a string takes as JSON text. */
  function jsonChars(text: string): number {
    return apply(regexpTest, ESCAPED, [text]) ? stringify(text).length : text.length + 2;
  }

  function tooLarge(): Error {
    const error = new ErrorCtor("value too large");
    error.name = "ResultTooLarge";
    return error;
  }

  function brand(fn: unknown, value: unknown): boolean {
    try {
      apply(fn as (...args: unknown[]) => unknown, value, []);
      return true;
    } catch {
      return false;
    }
  }

  function textOf(value: unknown, limit: number): string {
    try {
      const text = typeof value === "string" ? value : value === undefined || value === null ? "" : StringCtor(value);
      return text.length > limit ? `${text.slice(0, limit)}…` : text;
    } catch {
      return "[unreadable]";
    }
  }

  /**
   * What a primitive that is its own node costs (its JSON and a separator): null, booleans,
   * strings and numbers JSON writes as themselves; undefined for anything else (the special
   * numbers are references, not nodes).
   */
  function plainCost(value: unknown): number | undefined {
    if (value === null || typeof value === "boolean") return 5;
    if (typeof value === "string") return jsonChars(value) + 1;
    if (typeof value === "number" && value === value && value !== Infinity && value !== -Infinity && !(value === 0 && 1 / value < 0)) return StringCtor(value).length + 1;
    return undefined;
  }

  /** Most values are one primitive: written at once, as the graph walk would write them, at the same cost. */
  function encodePrimitive(root: unknown, maxChars: number): string | undefined {
    const cost = plainCost(root);
    if (cost === undefined) return undefined;
    if (20 + cost > maxChars) throw tooLarge();
    return `{"root":0,"nodes":[${stringify(root)}]}`;
  }

  /**
   * An object of the caller's making whose values are all plain primitives, written at once, as
   * the graph walk would write it, at the same cost; undefined for anything else. Only for such
   * objects: reading a stranger's (a proxy's traps, its getters) here and again in the walk
   * would run its code twice.
   */
  function encodeFlat(root: Record<string, unknown>, maxChars: number): string | undefined {
    const node = create(null) as Record<string, number>;
    const values: unknown[] = [node];
    let cost = 23;
    for (const key of keys(root)) {
      if (key === "__proto__") continue;
      const value = root[key];
      const valueCost = plainCost(value);
      if (valueCost === undefined) return undefined;
      node[key] = values.length;
      cost += jsonChars(key) + 1 + valueCost + StringCtor(values.length).length + 1;
      values.push(value);
    }
    if (cost > maxChars) throw tooLarge();
    return stringify({ root: 0, nodes: values });
  }

  return function encode(root: unknown, maxChars: number, ownData = false): string {
    return encodePrimitive(root, maxChars) ?? (ownData ? encodeFlat(root as Record<string, unknown>, maxChars) : undefined) ?? encodeGraph(root, maxChars);
  };

  function encodeGraph(root: unknown, maxChars: number): string {
    const nodes: unknown[] = [];
    const seen = new MapCtor<object, number>();
    const work: [object, number][] = [];
    let budget = maxChars;

    function charge(amount: number): void {
      budget -= amount;
      if (budget < 0) throw tooLarge();
    }
    function push(node: unknown, cost: number): number {
      charge(cost);
      nodes.push(node);
      return nodes.length - 1;
    }
    /** A reference written into a container node: its digits, and a separator. */
    function link(value: unknown): number {
      const index = ref(value);
      charge(index < 0 ? 3 : StringCtor(index).length + 1);
      return index;
    }
    function ref(value: unknown): number {
      if (value === GETTER_THREW || value === UNREADABLE_PROPERTY) {
        const text = value === GETTER_THREW ? "[getter threw]" : "[unreadable property]";
        return push(["StandIn", text], jsonChars(text) + 1);
      }
      const cost = plainCost(value);
      if (cost !== undefined) return push(value, cost);
      switch (typeof value) {
        case "undefined":
          return -1;
        case "number":
          if (value !== value) return -3;
          if (value === Infinity) return -4;
          if (value === -Infinity) return -5;
          return -6;
        case "bigint": {
          const digits = apply(bigintToString, value, []) as string;
          return push(["BigInt", digits], digits.length + 13);
        }
        case "symbol": {
          let description = "";
          try {
            description = (apply(symbolDescription, value, []) as string | undefined) ?? "";
          } catch {
            // Leave it blank.
          }
          const text = `[Symbol(${textOf(description, 200)})]`;
          return push(["StandIn", text], jsonChars(text) + 1);
        }
        case "function": {
          let name = "";
          try {
            const descriptor = getOwnPropertyDescriptor(value, "name");
            name = descriptor && typeof descriptor.value === "string" ? descriptor.value : "";
          } catch {
            // A revoked proxy: leave the name blank.
          }
          const text = name ? `[Function: ${textOf(name, 200)}]` : "[Function]";
          return push(["StandIn", text], jsonChars(text) + 1);
        }
        default: {
          const object = value as object;
          const known = apply(mapGet, seen, [object]) as number | undefined;
          if (known !== undefined) return known;
          const index = push(0, 3);
          apply(mapSet, seen, [object, index]);
          work.push([object, index]);
          return index;
        }
      }
    }
    function read(object: object, key: string): unknown {
      let descriptor: PropertyDescriptor | undefined;
      try {
        descriptor = getOwnPropertyDescriptor(object, key);
      } catch {
        return UNREADABLE_PROPERTY;
      }
      if (!descriptor) return undefined;
      if ("value" in descriptor) return descriptor.value;
      if (!descriptor.get) return undefined;
      try {
        return apply(descriptor.get, object, []);
      } catch {
        return GETTER_THREW;
      }
    }
    function describe(object: object): unknown {
      // An agent of the runtime's, looked up by identity (no trap of the proxy runs).
      const agent = agentOf?.(object);
      if (agent !== undefined) {
        charge(jsonChars(agent[0]) + (agent[1] === null ? 4 : jsonChars(agent[1])) + 12);
        return ["Agent", agent[0], agent[1]];
      }
      // Arrays and plain objects first: they are most values, and brand checks cost a throw each.
      let arrayLike = false;
      let prototype: object | null = null;
      try {
        arrayLike = isArray(object);
        if (!arrayLike) prototype = getPrototypeOf(object);
      } catch {
        return ["StandIn", "[revoked proxy]"];
      }
      if (arrayLike) return describeArray(object as unknown[]);
      if (prototype === ObjectPrototype || prototype === null) return describeObject(object);
      if (brand(dateGetTime, object)) {
        const time = apply(dateGetTime, object, []) as number;
        charge(36);
        return ["Date", time === time ? apply(dateToISOString, object, []) : null];
      }
      if (brand(mapSize, object)) {
        const node: unknown[] = ["Map"];
        charge(6);
        const iterator = apply(mapEntries, object, []) as Iterator<[unknown, unknown]>;
        for (let step = apply(mapIteratorNext, iterator, []); !step.done; step = apply(mapIteratorNext, iterator, [])) {
          node.push(link(step.value[0]), link(step.value[1]));
        }
        return node;
      }
      if (brand(setSize, object)) {
        const node: unknown[] = ["Set"];
        charge(6);
        const iterator = apply(setValues, object, []) as Iterator<unknown>;
        for (let step = apply(setIteratorNext, iterator, []); !step.done; step = apply(setIteratorNext, iterator, [])) {
          node.push(link(step.value));
        }
        return node;
      }
      if (brand(regexpSource, object) && brand(regexpFlags, object)) {
        const source = apply(regexpSource, object, []) as string;
        const flags = apply(regexpFlags, object, []) as string;
        charge(jsonChars(source) + flags.length + 14);
        return ["RegExp", source, flags];
      }
      if (isView(object) || brand(arrayBufferByteLength, object)) return bytes(object);
      // instanceof, not a brand check: calling then() on a rejected promise would leave a stray rejection.
      if (object instanceof PromiseCtor) return ["StandIn", "[Promise]"];
      if (brand(weakMapHas, object)) return ["StandIn", "[WeakMap]"];
      if (brand(weakSetHas, object)) return ["StandIn", "[WeakSet]"];
      if (object instanceof ErrorCtor) {
        const name = textOf(readInherited(object, "name") ?? "Error", 200);
        const message = textOf(readInherited(object, "message"), 10_000);
        charge(jsonChars(name) + jsonChars(message) + 11);
        return ["Error", name, message];
      }
      return describeObject(object);
    }
    function readInherited(object: object, key: string): unknown {
      try {
        return (object as Record<string, unknown>)[key];
      } catch {
        return undefined;
      }
    }
    function describeArray(array: unknown[]): number[] {
      const length = read(array, "length");
      const count = typeof length === "number" ? length : 0;
      // Commas first: a huge sparse array is refused before it is walked.
      charge(count);
      const node = new Array<number>(count);
      for (let index = 0; index < count; index += 1) {
        const key = StringCtor(index);
        let present = false;
        try {
          present = getOwnPropertyDescriptor(array, key) !== undefined;
        } catch {
          present = false;
        }
        if (present) node[index] = link(read(array, key));
        else {
          charge(3);
          node[index] = -2;
        }
      }
      return node;
    }
    function describeObject(object: object): unknown {
      let names: string[];
      try {
        names = keys(object);
      } catch {
        return ["StandIn", "[unreadable object]"];
      }
      const node = create(null) as Record<string, number>;
      for (const key of names) {
        if (key === "__proto__") continue;
        charge(jsonChars(key) + 1);
        node[key] = link(read(object, key));
      }
      return node;
    }
    function bytes(object: object): unknown {
      let kind = "ArrayBuffer";
      let view: Uint8Array;
      if (isView(object)) {
        kind = (typedArrayTag ? apply(typedArrayTag, object, []) : undefined) ?? "DataView";
        const { buffer, byteOffset, byteLength } = object as ArrayBufferView;
        view = new Uint8ArrayCtor(buffer, byteOffset, byteLength);
      } else {
        view = new Uint8ArrayCtor(object as ArrayBuffer);
      }
      charge(view.length * 2 + 24);
      let hex = "";
      for (let index = 0; index < view.length; index += 1) {
        const byte = view[index] as number;
        hex += HEX[byte >> 4] + (HEX[byte & 15] as string);
      }
      return ["Bytes", kind, hex];
    }

    charge(20);
    const rootRef = ref(root);
    while (work.length > 0) {
      const [object, index] = work.pop() as [object, number];
      nodes[index] = describe(object);
    }
    return stringify({ root: rootRef, nodes });
  }
}
