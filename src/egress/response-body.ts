/**
 * A fetched response's body, read whole as the host's `fetch` would read it: decoded as its
 * `content-encoding` says (gzip, deflate in either form, br, zstd; an encoding this runtime does
 * not know leaves the body as sent, as `fetch` does), and counted as it is decoded, so a small
 * body that inflates past the limit is stopped there.
 */
import { Transform, type Readable, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import zlib from "node:zlib";

/** Most content codings a response may stack (as undici's `fetch`, against decompression chains). */
const MAX_CONTENT_CODINGS = 5;

/** The body could not be read within the limit. */
export class BodyTooLarge extends Error {}

/**
 * Reads `body` whole, decoded for `contentEncoding`, within `maxBytes` of decoded bytes (a
 * {@link BodyTooLarge} past them, the body then abandoned). Fails as reading or decoding fails.
 */
export async function readBody(body: Readable, contentEncoding: string | undefined, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  const consume = async (decoded: AsyncIterable<Buffer>) => {
    for await (const chunk of decoded) {
      bytes += chunk.byteLength;
      if (bytes > maxBytes) throw new BodyTooLarge();
      chunks.push(chunk);
    }
  };
  let decoders: Transform[];
  try {
    decoders = decodersFor(contentEncoding);
  } catch (error) {
    // Refused before it is read: ended, or its connection would stay open as long as the server sends.
    body.destroy();
    throw error;
  }
  if (decoders.length === 0) {
    // Most bodies are sent as they are: read at once, without a pipeline's stages.
    try {
      await consume(body);
    } finally {
      body.destroy();
    }
  }
  // Typed by its overloads for fixed lengths only: a chain of any length is the same call.
  else await (pipeline as (...stages: unknown[]) => Promise<void>)(body, ...decoders, consume);
  return Buffer.concat(chunks, bytes);
}

/** The decoders for a response's content codings, outermost last as they were applied; none for an unknown one. */
function decodersFor(contentEncoding: string | undefined): Transform[] {
  if (contentEncoding === undefined || contentEncoding.trim() === "") return [];
  const codings = contentEncoding.toLowerCase().split(",").map((coding) => coding.trim());
  if (codings.length > MAX_CONTENT_CODINGS) throw new Error(`too many content-encodings in response: ${codings.length}, at most ${MAX_CONTENT_CODINGS}`);
  const decoders: Transform[] = [];
  for (const coding of codings.reverse()) {
    const decoder = decoderFor(coding);
    if (decoder === null) continue;
    if (decoder === undefined) {
      // An unknown coding: the body is left as sent, and the decoders made for the others are let go now.
      for (const made of decoders) made.destroy();
      return [];
    }
    decoders.push(decoder);
  }
  return decoders;
}

/** Lenient, as browsers and curl are with slightly truncated streams. */
const ZLIB_OPTIONS = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };

/** The decoder for one coding; null for `identity`; undefined for one this runtime does not know. */
function decoderFor(coding: string): Transform | null | undefined {
  switch (coding) {
    case "identity":
      return null;
    case "gzip":
    case "x-gzip":
      return zlib.createGunzip(ZLIB_OPTIONS);
    case "deflate":
      return new Inflate();
    case "br":
      return zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
    case "zstd":
      return zlib.createZstdDecompress({ params: { [zlib.constants.ZSTD_d_windowLogMax]: 23 } });
    default:
      return undefined;
  }
}

/** `deflate` as servers send it: zlib-wrapped (RFC 1950) or, against the RFC, raw (RFC 1951), told apart by the first byte. */
class Inflate extends Transform {
  #inner: zlib.Inflate | zlib.InflateRaw | undefined;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.#inner === undefined) {
      if (chunk.length === 0) return done();
      this.#inner = (chunk[0]! & 0x0f) === 0x08 ? zlib.createInflate(ZLIB_OPTIONS) : zlib.createInflateRaw(ZLIB_OPTIONS);
      this.#inner.on("data", (data: Buffer) => this.push(data));
      this.#inner.on("error", (error: Error) => this.destroy(error));
    }
    this.#inner.write(chunk, done);
  }

  override _flush(done: TransformCallback): void {
    if (this.#inner === undefined) return done();
    this.#inner.once("end", () => done());
    this.#inner.end();
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.#inner?.destroy();
    done(error);
  }
}
