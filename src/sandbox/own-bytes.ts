/**
 * Values read back from V8's serialisation own their bytes. Node's reader makes each typed
 * array and `DataView` a view over the buffer it reads from: for a message from the host, the
 * sandbox process's IPC read chunk, which can hold other messages too, other agents' runs among
 * them (isolated-vm copies a view's whole buffer into an isolate, so a program could read them
 * through `view.buffer`); for a stored context, the row's bytes, which a driver may have read
 * into a pooled buffer shared with unrelated data. Every view gets a buffer holding its own
 * bytes and nothing else. The sandbox process applies this at the one door host messages come
 * in by, before any part of one reaches an isolate.
 */

/**
 * Parts (containers and the entries read from them) the first walk visits before it gives way to
 * one that remembers what it saw: most messages are trees of a few objects, walked fastest
 * without a set (which costs more than the rest of the walk), while a value with cycles or much
 * sharing (one large object held many times) is walked once per container.
 */
const UNREMEMBERED_VISITS = 100_000;

/** The message with every view in it over a buffer of its own (changed in place; the same value returned). */
export function ownBytes<T>(message: T): T {
  if (typeof message !== "object" || message === null) return message;
  if (ArrayBuffer.isView(message)) return ownCopy(message) as T;
  // One copy per view, so a view the message holds twice is still one view.
  const copies = new Map<ArrayBufferView, ArrayBufferView>();
  if (!walk(message, copies, undefined)) walk(message, copies, new Set<object>());
  return message;
}

/**
 * Replaces each view reachable from `root` by its own copy, where it stands. Without `seen`,
 * gives up (false) after {@link UNREMEMBERED_VISITS} parts; views it replaced stay replaced.
 */
function walk(root: object, copies: Map<ArrayBufferView, ArrayBufferView>, seen: Set<object> | undefined): boolean {
  let visits = 0;
  const work: object[] = [root];
  seen?.add(root);
  const visit = (value: unknown): unknown => {
    visits += 1;
    if (typeof value !== "object" || value === null) return value;
    if (ArrayBuffer.isView(value)) {
      let copy = copies.get(value);
      if (copy === undefined) {
        copy = ownCopy(value);
        copies.set(value, copy);
      }
      return copy;
    }
    if (seen === undefined) work.push(value);
    else if (!seen.has(value)) {
      seen.add(value);
      work.push(value);
    }
    return value;
  };
  while (work.length > 0) {
    if (seen === undefined && (visits += 1) > UNREMEMBERED_VISITS) return false;
    const node = work.pop() as object;
    if (Array.isArray(node)) {
      // Its own keys, not 0 to length: structured clone keeps an array's named properties, and a
      // sparse array's length says nothing of the entries it holds.
      const keys = Object.keys(node);
      // Its keys are exactly 0 to length - 1 (indices come first, in order, named properties last).
      const dense = keys.length === node.length && (keys.length === 0 || keys[keys.length - 1] === String(node.length - 1));
      const items = node as unknown[];
      for (let at = 0; at < keys.length; at += 1) {
        const key = dense ? at : (keys[at] as unknown as number);
        const item = items[key];
        if (typeof item === "object" && item !== null) items[key] = visit(item);
        else visits += 1;
      }
    } else if (node instanceof Map) {
      const entries = [...node];
      if (entries.some(([key, value]) => ArrayBuffer.isView(key) || ArrayBuffer.isView(value))) {
        // Rebuilt in order, so a view used as a key is replaced too.
        node.clear();
        for (const [key, value] of entries) node.set(visit(key), visit(value));
      } else for (const [key, value] of entries) { visit(key); visit(value); }
    } else if (node instanceof Set) {
      const items = [...node];
      if (items.some((item) => ArrayBuffer.isView(item))) {
        node.clear();
        for (const item of items) node.add(visit(item));
      } else for (const item of items) visit(item);
    } else if (node instanceof Error) {
      // Its `cause` is an own property that is not enumerable.
      const record = node as unknown as Record<string, unknown>;
      for (const key of Object.getOwnPropertyNames(record)) record[key] = visit(record[key]);
    } else if (!(node instanceof ArrayBuffer || node instanceof Date || node instanceof RegExp)) {
      // A plain object as structured clone made it: its keys are its own, and this process adds none to Object.prototype.
      const record = node as Record<string, unknown>;
      for (const key in record) {
        const item = record[key];
        if (typeof item === "object" && item !== null) record[key] = visit(item);
        else visits += 1;
      }
    }
    if (seen === undefined && visits > UNREMEMBERED_VISITS) return false;
  }
  return true;
}

/** A view like `view` over a new buffer that holds exactly its bytes (itself when it already does). */
function ownCopy(view: ArrayBufferView): ArrayBufferView {
  if (view.byteOffset === 0 && view.byteLength === view.buffer.byteLength && !(view.buffer instanceof SharedArrayBuffer)) return view;
  const bytes = new Uint8Array(view.byteLength);
  bytes.set(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
  if (view instanceof DataView) return new DataView(bytes.buffer);
  // A Node Buffer's own constructor is deprecated as a call; Buffer.from keeps its kind without it.
  if (Buffer.isBuffer(view)) return Buffer.from(bytes.buffer);
  const Kind = view.constructor as new (buffer: ArrayBuffer) => ArrayBufferView;
  return new Kind(bytes.buffer);
}
