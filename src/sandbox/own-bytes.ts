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

/** The message with every view in it over a buffer of its own (changed in place; the same value returned). */
export function ownBytes<T>(message: T): T {
  if (typeof message !== "object" || message === null) return message;
  if (ArrayBuffer.isView(message)) return ownCopy(message) as T;
  const copies = new Map<ArrayBufferView, ArrayBufferView>();
  const own = (view: ArrayBufferView): ArrayBufferView => {
    let copy = copies.get(view);
    if (copy === undefined) {
      copy = ownCopy(view);
      copies.set(view, copy);
    }
    return copy;
  };
  const seen = new Set<object>([message]);
  const work: object[] = [message];
  // Each container once (cycles and shared parts survive structured clone); a view found is replaced where it stands.
  const visit = (value: unknown): unknown => {
    if (typeof value !== "object" || value === null) return value;
    if (ArrayBuffer.isView(value)) return own(value);
    if (!seen.has(value)) {
      seen.add(value);
      work.push(value);
    }
    return value;
  };
  while (work.length > 0) {
    const node = work.pop() as object;
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index += 1) {
        const item: unknown = node[index];
        if (typeof item === "object" && item !== null) node[index] = visit(item);
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
    } else if (!(node instanceof ArrayBuffer || node instanceof Date || node instanceof RegExp)) {
      // Plain objects, and errors with their `cause` (an own property that is not enumerable).
      const record = node as Record<string, unknown>;
      for (const key of node instanceof Error ? Object.getOwnPropertyNames(record) : Object.keys(record)) {
        const item = record[key];
        if (typeof item === "object" && item !== null) record[key] = visit(item);
      }
    }
  }
  return message;
}

/** A view like `view` over a new buffer that holds exactly its bytes (itself when it already does). */
function ownCopy(view: ArrayBufferView): ArrayBufferView {
  if (view.byteOffset === 0 && view.byteLength === view.buffer.byteLength && !(view.buffer instanceof SharedArrayBuffer)) return view;
  const bytes = new Uint8Array(view.byteLength);
  bytes.set(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
  if (view instanceof DataView) return new DataView(bytes.buffer);
  const Kind = view.constructor as new (buffer: ArrayBuffer) => ArrayBufferView;
  return new Kind(bytes.buffer);
}
