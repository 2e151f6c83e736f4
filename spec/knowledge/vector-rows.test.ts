/**
 * The scan both in-process retrievers search with: every row's score is its dot product with the
 * asked vector, whatever the number of dimensions (the scan sums four at a time).
 */
import { describe, expect, test } from "vitest";
import { TopK, VectorRows } from "../../src/knowledge/vectors.ts";

function vectorsOf(count: number, dimensions: number, seed: number): Float32Array[] {
  let state = seed;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31 - 0.5;
  return Array.from({ length: count }, () => {
    const vector = Float32Array.from({ length: dimensions }, next);
    const length = Math.hypot(...vector);
    return vector.map((value) => value / length);
  });
}

describe("VectorRows.scan", () => {
  test.each([1, 3, 4, 7, 384, 385])("with %i dimensions, the best rows and their scores are those of a plain dot product", (dimensions) => {
    const vectors = vectorsOf(200, dimensions, dimensions);
    const rows = new VectorRows(dimensions, 8);
    vectors.forEach((vector, index) => rows.set(`row-${index}`, vector, index % 2 === 0 ? { half: "even" } : undefined));
    const [asked] = vectorsOf(1, dimensions, 99) as [Float32Array];
    const dot = (vector: Float32Array) => vector.reduce((sum, value, index) => sum + value * (asked[index] as number), 0);
    const expected = vectors
      .map((vector, index) => ({ key: `row-${index}`, score: Math.min(1, Math.max(-1, dot(vector))), index }))
      .filter(({ index }) => index % 2 === 0)
      .sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : 1))
      .slice(0, 10);
    const best = new TopK<number>(10);
    rows.scan(asked, { half: ["even"] }, Number.NEGATIVE_INFINITY, best);
    const found = best.best();
    expect(found.map((entry) => entry.key)).toEqual(expected.map((entry) => entry.key));
    found.forEach((entry, at) => expect(entry.score).toBeCloseTo(expected[at]!.score, 6));
  });
});
