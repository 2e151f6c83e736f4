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
    // Files only: a pipe or socket that happens to be named like a log would be waited on for ever.
    else if (entry.isFile() && LOG_FILE.test(entry.name)) files.push(path);
  }
  return files;
}

/**
 * The longest line given whole: improv's own lines are far shorter. A longer one is given cut
 * (so it reads as malformed), where joining it could pass the longest string V8 makes.
 */
export const MAX_LINE_CHARS = 64 * 1024 * 1024;

/**
 * Streams the lines of a source, gunzipping when it starts with the gzip magic bytes.
 * `onBytes` reports raw bytes read, for progress. Gzipped data cut short or corrupt, or a read
 * that fails, ends the source, not the report: the lines before have been given, and what went
 * wrong is returned (`truncated or corrupt gzip after line N`, `could not be read after line N
 * (EIO)`); undefined when the source was read whole.
 */
export async function forEachLine(source: LogSource, onLine: (line: string, lineNumber: number) => void, onBytes: (bytes: number) => void = () => {}, maxLineChars = MAX_LINE_CHARS): Promise<string | undefined> {
  const raw = source.open();
  const decoder = new StringDecoder("utf8");
  // The start of a line not ended yet, piece by piece: each chunk is searched once, and a long
  // line is joined once, where searching it whole at every chunk took time quadratic in its length.
  let pending: string[] = [];
  let pendingChars = 0;
  let lineNumber = 0;
  let first = true;
  const keep = (piece: string) => {
    // Past the longest line, the rest of it is dropped as it comes.
    if (pendingChars > maxLineChars) return;
    pending.push(piece);
    pendingChars += piece.length;
  };
  const line = (tail: string) => {
    if (pendingChars + tail.length <= maxLineChars) return pending.length === 0 ? tail : pending.join("") + tail;
    return `${(pending.length === 0 ? tail : pending.join("") + tail).slice(0, maxLineChars >> 1)}…[line cut: longer than ${maxLineChars} characters]`;
  };
  try {
    const text = await maybeGunzip(raw, onBytes);
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
        onLine(line(piece.slice(start, end)), lineNumber);
        pending = [];
        pendingChars = 0;
        start = end + 1;
      }
      if (start < piece.length) keep(start === 0 ? piece : piece.slice(start));
    }
  } catch (error) {
    // The line being read when the data broke off is dropped: it is cut short, or garbled.
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (typeof code !== "string") throw error;
    raw.destroy();
    return isZlibError(error) ? `truncated or corrupt gzip after line ${lineNumber}` : `could not be read after line ${lineNumber} (${code})`;
  }
  const last = line(decoder.end());
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
    const { Readable: ReadableStream, pipeline } = await import("node:stream");
    // Not `pipe`: a read that fails must end the gunzip stage with its error, not leave it waiting.
    const gunzip = createGunzip();
    pipeline(ReadableStream.from(rest()), gunzip, () => undefined);
    return gunzip;
  }
  return rest();
}
