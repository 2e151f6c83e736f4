/**
 * A bounded JSON-like printer for console output and thrown values. Runs inside the isolate
 * (sent as source text, so it must not use anything from its module scope). Unlike
 * `JSON.stringify` or `String(array)`, it stops at `maxChars`: a value whose full text would
 * be enormous (shared references expanded, a "billion laughs" array) prints its first
 * `maxChars` characters and an ellipsis, in time proportional to that. Cycles and nesting
 * past a fixed depth print as a marker; a throwing getter prints as a stand-in.
 */
export function createPrinter(): (value: unknown, maxChars: number) => string {
  "use strict";
  const { keys, getOwnPropertyDescriptor } = Object;
  const apply = Reflect.apply;
  const isArray = Array.isArray;
  const stringify = JSON.stringify;
  const StringCtor = String;
  const dateGetTime = Date.prototype.getTime;
  const dateToISOString = Date.prototype.toISOString;
  const ErrorCtor = Error;
  const MAX_DEPTH = 16;

  /** An error's name or message, if it is a string that can be read. */
  function errorField(error: object, key: "name" | "message"): string {
    try {
      const value = (error as Record<string, unknown>)[key];
      return typeof value === "string" ? value : "";
    } catch {
      return "";
    }
  }

  function read(object: object, key: string): unknown {
    try {
      const descriptor = getOwnPropertyDescriptor(object, key);
      if (!descriptor) return undefined;
      return "value" in descriptor ? descriptor.value : descriptor.get ? apply(descriptor.get, object, []) : undefined;
    } catch {
      return "[unreadable]";
    }
  }

  function dateText(value: object): string | undefined {
    try {
      const time = apply(dateGetTime, value, []) as number;
      return time === time ? (apply(dateToISOString, value, []) as string) : "Invalid Date";
    } catch {
      return undefined;
    }
  }

  return function print(root: unknown, maxChars: number): string {
    let out = "";
    let full = false;
    const ancestors: object[] = [];

    function emit(text: string): void {
      if (full) return;
      const room = maxChars - out.length;
      if (text.length <= room) {
        out += text;
        return;
      }
      out += `${text.slice(0, room)}…`;
      full = true;
    }

    function write(value: unknown): void {
      if (full) return;
      switch (typeof value) {
        case "string":
          emit(stringify(value.length > maxChars ? value.slice(0, maxChars) : value));
          return;
        case "number":
          emit(value === value && value !== Infinity && value !== -Infinity ? StringCtor(value) : "null");
          return;
        case "boolean":
          emit(value ? "true" : "false");
          return;
        case "bigint":
          emit(`${StringCtor(value)}n`);
          return;
        case "object":
          break;
        default:
          emit("null");
          return;
      }
      if (value === null) {
        emit("null");
        return;
      }
      const date = dateText(value);
      if (date !== undefined) {
        emit(stringify(date));
        return;
      }
      if (value instanceof ErrorCtor) {
        emit(stringify(`${errorField(value, "name") || "Error"}: ${errorField(value, "message")}`.slice(0, maxChars)));
        return;
      }
      if (ancestors.length >= MAX_DEPTH || ancestors.includes(value)) {
        emit(ancestors.length >= MAX_DEPTH ? '"[nested too deep]"' : '"[Circular]"');
        return;
      }
      ancestors.push(value);
      try {
        if (isArray(value)) {
          emit("[");
          const length = value.length;
          for (let index = 0; index < length && !full; index += 1) {
            if (index > 0) emit(",");
            write(read(value, StringCtor(index)));
          }
          emit("]");
          return;
        }
        emit("{");
        let first = true;
        for (const key of keys(value)) {
          if (full) break;
          emit(`${first ? "" : ","}${stringify(key)}:`);
          first = false;
          write(read(value, key));
        }
        emit("}");
      } catch {
        emit('"[unreadable]"');
      } finally {
        ancestors.pop();
      }
    }

    write(root);
    return out;
  };
}
