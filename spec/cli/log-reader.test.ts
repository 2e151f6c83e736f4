/** Log files are read line by line, whatever the lines' lengths and however the chunks fall. */
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { expect, test } from "vitest";
import { forEachLine } from "../../src/cli/log-reader.ts";

async function linesOf(chunks: readonly Buffer[]): Promise<string[]> {
  const lines: string[] = [];
  await forEachLine({ name: "test", open: () => Readable.from(chunks) } as never, (line) => lines.push(line));
  return lines;
}

test("a line spread over many chunks, a character split between two, lines ended or not", async () => {
  const long = "é".repeat(300_000);
  const text = Buffer.from(`{"a":1}\n${long}\n\n{"b":"ü"}\nlast`);
  // 4 KiB chunks: the long line spans about 150 of them, and some split a two-byte character.
  const chunks = Array.from({ length: Math.ceil(text.length / 4_099) }, (_, at) => text.subarray(at * 4_099, (at + 1) * 4_099));
  expect(await linesOf(chunks)).toEqual(['{"a":1}', long, "", '{"b":"ü"}', "last"]);
  expect(await linesOf([gzipSync(text)])).toEqual(['{"a":1}', long, "", '{"b":"ü"}', "last"]);
});

test("a byte order mark before the first line is no part of it", async () => {
  expect(await linesOf([Buffer.from([0xef, 0xbb]), Buffer.from([0xbf]), Buffer.from('{"a":1}\n{"b":2}\n')])).toEqual(['{"a":1}', '{"b":2}']);
});

test("gzipped data cut short: the lines before the cut are given, and what went wrong is returned, not thrown", async () => {
  const whole = gzipSync(Array.from({ length: 20_000 }, (_, index) => `{"n":${index * 7919}}`).join("\n"));
  const lines: string[] = [];
  const problem = await forEachLine({ name: "cut.jsonl.gz", open: () => Readable.from([whole.subarray(0, whole.length >> 1)]) } as never, (line) => lines.push(line));
  expect(problem).toBe(`truncated or corrupt gzip after line ${lines.length}`);
  expect(lines.length).toBeGreaterThan(1_000);
  expect(lines.every((line, index) => line === `{"n":${index * 7919}}`)).toBe(true);
});
