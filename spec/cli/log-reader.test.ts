/** Log files are read line by line, whatever the lines' lengths and however the chunks fall. */
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { expect, test } from "vitest";
import { forEachLine, resolveSources } from "../../src/cli/log-reader.ts";

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

/** A source that gives `chunks`, then fails as a disk would, once `readSome` (lines have come through, however slowly) or after 10 s. */
function failingSource(chunks: readonly Buffer[], readSome: Promise<void>): never {
  const open = () =>
    Readable.from(
      (async function* () {
        yield* chunks;
        await Promise.race([readSome, new Promise((resolve) => setTimeout(resolve, 10_000))]);
        throw Object.assign(new Error("i/o error"), { code: "EIO" });
      })(),
    );
  return { name: "disk.jsonl", open } as never;
}

test("a read that fails part-way, plain or gzipped: the lines before are given, what went wrong is returned, and nothing hangs", async () => {
  const text = Buffer.from(Array.from({ length: 2_000 }, (_, index) => `{"n":${index}}`).join("\n") + "\n");
  for (const chunks of [[text], [gzipSync(text)]]) {
    const lines: string[] = [];
    let firstLine = () => {};
    const readSome = new Promise<void>((resolve) => (firstLine = resolve));
    const problem = await forEachLine(failingSource(chunks, readSome), (line) => {
      lines.push(line);
      firstLine();
    });
    expect(problem).toMatch(/^could not be read after line \d+ \(EIO\)$/);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((line, index) => line === `{"n":${index}}`)).toBe(true);
  }
});

test("a line longer than the longest kept is given cut short, so it counts as malformed; the lines after it are whole", async () => {
  const text = Buffer.from(`{"a":1}\n${"x".repeat(50_000)}\n{"b":2}\n`);
  const chunks = Array.from({ length: Math.ceil(text.length / 1_000) }, (_, at) => text.subarray(at * 1_000, (at + 1) * 1_000));
  const lines: [string, number][] = [];
  await forEachLine({ name: "long.jsonl", open: () => Readable.from(chunks) } as never, (line, lineNumber) => lines.push([line, lineNumber]), undefined, 10_000);
  expect(lines.map(([line, lineNumber]) => [line.length <= 10_100, lineNumber])).toEqual([[true, 1], [true, 2], [true, 3]]);
  expect(lines[1]?.[0]).toMatch(/^x+…\[line cut: longer than 10000 characters\]$/);
  expect(lines[2]?.[0]).toBe('{"b":2}');
});

test("a directory's pipes and sockets named like logs are not read (they would be waited on for ever)", async () => {
  const directory = mkdtempSync(join(tmpdir(), "improv-fifo-"));
  writeFileSync(join(directory, "calls.jsonl"), '{"a":1}\n');
  execFileSync("mkfifo", [join(directory, "pipe.jsonl")]);
  expect((await resolveSources([directory])).map((source) => source.name)).toEqual([join(directory, "calls.jsonl")]);
});
