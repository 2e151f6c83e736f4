import { deserialize, serialize } from "node:v8";
import { describe, expect, test } from "vitest";
import { ownBytes } from "../../src/sandbox/own-bytes.ts";

/** A message as the sandbox process reads it: structured clone, its views over the one buffer it was read into. */
function received<T>(message: T): T {
  const bytes = serialize(message);
  // Read from the middle of a larger buffer, as a chunk of the IPC stream is.
  const chunk = new Uint8Array(bytes.length + 64);
  chunk.set(bytes, 32);
  return deserialize(chunk.subarray(32, 32 + bytes.length)) as T;
}

function ownsItsBuffer(view: ArrayBufferView): boolean {
  return view.byteOffset === 0 && view.byteLength === view.buffer.byteLength;
}

describe("ownBytes: every view of a received message gets a buffer of its own", () => {
  test("the deserializer does make views over the message buffer (what this guards against)", () => {
    const message = received({ bytes: new Uint8Array([1, 2, 3]) });
    expect(ownsItsBuffer(message.bytes)).toBe(false);
  });

  test("views in arrays, objects, Map keys and values, Sets and an error's cause; contents and kinds kept", () => {
    const shared = new Uint16Array([5, 6]);
    const message = received({
      list: [new Int8Array([-1, 2]), shared, shared],
      map: new Map<unknown, unknown>([[new Uint8Array([9]), new DataView(new Uint8Array([7, 8]).buffer)], ["plain", 1]]),
      set: new Set([new Float64Array([1.5])]),
      error: new Error("failed", { cause: new BigInt64Array([3n]) }),
      buffer: new Uint8Array([4, 4]).buffer,
      text: "kept",
    });
    const own = ownBytes(message);
    expect(own).toBe(message);
    const views: ArrayBufferView[] = [
      ...own.list,
      ...[...own.map.keys(), ...own.map.values()].filter((entry): entry is ArrayBufferView => ArrayBuffer.isView(entry)),
      ...own.set,
      own.error.cause as ArrayBufferView,
    ];
    for (const view of views) expect(ownsItsBuffer(view)).toBe(true);
    expect([...own.list[0]!]).toEqual([-1, 2]);
    expect(own.list[1]).toBeInstanceOf(Uint16Array);
    expect([...(own.list[1] as Uint16Array)]).toEqual([5, 6]);
    // One view sent twice is still one view.
    expect(own.list[1]).toBe(own.list[2]);
    expect([...own.map.keys()].map((key) => (ArrayBuffer.isView(key) ? [...(key as Uint8Array)] : key))).toEqual([[9], "plain"]);
    expect((own.map.values().next().value as DataView).getUint8(1)).toBe(8);
    expect([...own.set][0]).toEqual(new Float64Array([1.5]));
    expect(own.error.cause).toEqual(new BigInt64Array([3n]));
    expect(new Uint8Array(own.buffer)).toEqual(new Uint8Array([4, 4]));
    expect(own.text).toBe("kept");
  });

  test("cycles are walked once and survive", () => {
    const node: { self?: unknown; bytes: Uint8Array } = { bytes: new Uint8Array([1]) };
    node.self = node;
    const own = ownBytes(received({ node }));
    expect(own.node.self).toBe(own.node);
    expect(ownsItsBuffer(own.node.bytes)).toBe(true);
  });

  test("much sharing (each of 40 levels holding the one below twice: 2^40 paths) is walked once per container", () => {
    let level: unknown[] = [new Uint8Array([7])];
    for (let depth = 0; depth < 40; depth += 1) level = [level, level];
    const own = ownBytes(received({ level }));
    let bottom: unknown = own.level;
    while (Array.isArray(bottom) && Array.isArray(bottom[1])) bottom = bottom[1];
    const view = (bottom as unknown[])[0] as Uint8Array;
    expect(ownsItsBuffer(view)).toBe(true);
    expect([...view]).toEqual([7]);
  });

  test("views in an array's named properties and in a sparse array's entries; a Buffer stays a Buffer", () => {
    const list: unknown[] & { extra?: Uint8Array } = [1, 2];
    list.extra = new Uint8Array([3, 4]);
    const holey: unknown[] & { named?: Uint8Array } = [];
    holey[5] = new Uint8Array([5]);
    holey.named = new Uint8Array([6]);
    const sparse: unknown[] = [];
    sparse[1_000_000_000] = new Uint8Array([7]);
    const own = ownBytes(received({ list, holey, sparse, buffer: Buffer.from("buffer") }));
    expect(ownsItsBuffer(own.list.extra as Uint8Array)).toBe(true);
    expect([...(own.list.extra as Uint8Array)]).toEqual([3, 4]);
    expect(ownsItsBuffer(own.holey[5] as Uint8Array)).toBe(true);
    expect(ownsItsBuffer(own.holey.named as Uint8Array)).toBe(true);
    expect(ownsItsBuffer(own.sparse[1_000_000_000] as Uint8Array)).toBe(true);
    expect(Buffer.isBuffer(own.buffer)).toBe(true);
    expect(ownsItsBuffer(own.buffer)).toBe(true);
    expect(own.buffer.toString()).toBe("buffer");
  });

  test("one large object held many times is read a bounded number of times, not once per place it is held", () => {
    let reads = 0;
    const table: Record<string, number> = {};
    for (let key = 0; key < 10_000; key += 1) Object.defineProperty(table, `k${key}`, { enumerable: true, get: () => ++reads });
    const bytes = new Uint8Array(new ArrayBuffer(8), 2, 3);
    const own = ownBytes({ rows: Array.from({ length: 20_000 }, () => table), bytes });
    // Read once per place it is held, that would be 200 million reads; the walk gives up on that
    // way early and reads it once more, remembering what it saw.
    expect(reads).toBeLessThan(200_000);
    expect(ownsItsBuffer(own.bytes)).toBe(true);
  });

  test("a view that is the whole message, and primitives, pass through", () => {
    const view = ownBytes(received(new Uint8Array([1, 2])));
    expect(ownsItsBuffer(view)).toBe(true);
    expect(ownBytes("text")).toBe("text");
    expect(ownBytes(null)).toBe(null);
  });
});
