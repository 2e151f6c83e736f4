import { createReadStream, type Stats } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { createGunzip } from "node:zlib";
import type { Readable } from "node:stream";

/** Files a directory contributes: JSONL logs, plain or gzipped, and rotated ones (`calls.jsonl.1`, `calls.jsonl.2.gz`). */
const LOG_FILE = /\.(?:jsonl|ndjson|log|json)(?:\.\d+)?(?:\.gz)?$/i;

/** One input: a file path, or `-` for standard input. */
export interface LogSource {
  readonly name: string;
  readonly size: number;
  open(): Readable;
}

/** A file or directory named as input that is not there: a usage mistake. */
export class MissingInputError extends Error {
  override readonly name = "MissingInputError";
}

const isMissing = (error: unknown) => ["ENOENT", "ENOTDIR"].includes((error as NodeJS.ErrnoException).code ?? "");

/** Expands files and directories (recursively) into sources; throws a {@link MissingInputError} for a missing path. */
export async function resolveSources(inputs: readonly string[], stdin: () => Readable = () => process.stdin): Promise<LogSource[]> {
  const sources: LogSource[] = [];
  // A file named twice (alone and in its directory, or through a link) is read once.
  const seen = new Set<string>();
  const once = async (file: string) => {
    const real = await realpath(file);
    if (seen.has(real)) return false;
    seen.add(real);
    return true;
  };
  for (const input of inputs) {
    if (input === "-") {
      sources.push({ name: "<stdin>", size: 0, open: stdin });
      continue;
    }
    let info: Stats;
    try {
      info = await stat(input);
    } catch (error) {
      if (isMissing(error)) throw new MissingInputError(`Cannot read "${input}": no such file or directory.`);
      throw error;
    }
    if (info.isDirectory()) {
      for (const file of await listLogFiles(input)) {
        if (!(await once(file))) continue;
        const size = (await stat(file)).size;
        sources.push({ name: file, size, open: () => createReadStream(file) });
      }
    } else if (await once(input)) {
      sources.push({ name: input, size: info.size, open: () => createReadStream(input) });
    }
  }
  return sources;
}

async function listLogFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) files.push(...(await listLogFiles(path)));
    else if (LOG_FILE.test(entry.name)) files.push(path);
  }
  return files;
}

/**
 * Streams the lines of a source, gunzipping when it starts with the gzip magic bytes.
 * `onBytes` reports raw bytes read, for progress. Gzipped data cut short or corrupt ends the
 * source, not the report: the lines before the damage have been given, and what went wrong is
 * returned (`truncated or corrupt gzip after line N`); undefined when the source was read whole.
 */
export async function forEachLine(source: LogSource, onLine: (line: string, lineNumber: number) => void, onBytes: (bytes: number) => void = () => {}): Promise<string | undefined> {
  const raw = source.open();
  const text = await maybeGunzip(raw, onBytes);
  const decoder = new StringDecoder("utf8");
  // The start of a line not ended yet, piece by piece: each chunk is searched once, and a long
  // line is joined once, where searching it whole at every chunk took time quadratic in its length.
  let pending: string[] = [];
  let lineNumber = 0;
  let first = true;
  try {
    for await (const chunk of text) {
      let piece = decoder.write(chunk as Buffer);
      // A byte order mark some editors and tools put first is no part of the first line.
      if (first && piece.length > 0) {
        first = false;
        if (piece.charCodeAt(0) === 0xfeff) piece = piece.slice(1);
      }
      let start = 0;
      for (let end = piece.indexOf("\n"); end !== -1; end = piece.indexOf("\n", start)) {
        lineNumber += 1;
        const tail = piece.slice(start, end);
        onLine(pending.length === 0 ? tail : pending.join("") + tail, lineNumber);
        pending = [];
        start = end + 1;
      }
      if (start < piece.length) pending.push(start === 0 ? piece : piece.slice(start));
    }
  } catch (error) {
    // The line being read when the data broke off is dropped: it is cut short, or garbled.
    if (isZlibError(error)) {
      raw.destroy();
      return `truncated or corrupt gzip after line ${lineNumber}`;
    }
    throw error;
  }
  const last = pending.join("") + decoder.end();
  if (last.length > 0) onLine(last, lineNumber + 1);
  return undefined;
}

/** zlib's errors carry codes such as `Z_BUF_ERROR` (data cut short) and `Z_DATA_ERROR` (data corrupt). */
const isZlibError = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code?.startsWith("Z_") === true;

/** Peeks at the first bytes and inserts a gunzip stage for gzip data. */
async function maybeGunzip(raw: Readable, onBytes: (bytes: number) => void): Promise<AsyncIterable<Buffer>> {
  const iterator = raw[Symbol.asyncIterator]();
  const first = await iterator.next();
  async function* rest(): AsyncGenerator<Buffer> {
    if (first.done) return;
    const head = Buffer.from(first.value as Buffer);
    onBytes(head.length);
    yield head;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      const chunk = Buffer.from(next.value as Buffer);
      onBytes(chunk.length);
      yield chunk;
    }
  }
  const head = first.done ? undefined : Buffer.from(first.value as Buffer);
  if (head && head[0] === 0x1f && head[1] === 0x8b) {
    const { Readable: ReadableStream } = await import("node:stream");
    return ReadableStream.from(rest()).pipe(createGunzip());
  }
  return rest();
}
