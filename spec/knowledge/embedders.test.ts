import OpenAI from "openai";
import { afterEach, describe, expect, test, vi } from "vitest";
import { aiSdkEmbedder, LEXICAL_MODEL, lexicalEmbedder, openaiEmbedder } from "../../src/knowledge/embedders.ts";
import { memoryRetriever } from "../../src/knowledge/memory-retriever.ts";
import { EmbeddingsTestServer, type EmbeddingsServerOptions } from "../../test-support/embeddings-server.ts";

const dot = (a: readonly number[], b: readonly number[]) => a.reduce((sum, value, index) => sum + value * (b[index] as number), 0);

describe("lexicalEmbedder", () => {
  test("deterministic unit vectors of its dimensions; texts sharing words are close, others are not", async () => {
    const embedder = lexicalEmbedder();
    expect(embedder).toMatchObject({ model: LEXICAL_MODEL, dimensions: 384 });
    const texts = ["Refunds take five business days.", "How long do refunds take?", "Parcels ship from our warehouse.", "refund", "money back", "refunds"];
    const [refunds, question, parcels, refund, money, plural] = await embedder.embed(texts);
    expect(await lexicalEmbedder().embed(texts)).toEqual([refunds, question, parcels, refund, money, plural]);
    for (const vector of [refunds, question, parcels]) {
      expect(vector).toHaveLength(384);
      expect(Math.hypot(...vector!)).toBeCloseTo(1, 10);
    }
    expect(dot(refunds!, question!)).toBeGreaterThan(0.3);
    expect(dot(refunds!, question!)).toBeGreaterThan(dot(parcels!, question!) + 0.3);
    // A word is close to its other forms, through its trigrams...
    expect(dot(plural!, refund!)).toBeGreaterThan(0.3);
    // ...but the embedder matches words, not meaning.
    expect(Math.abs(dot(refund!, money!))).toBeLessThan(0.1);
    // Case and punctuation do not matter; common words are left out.
    expect(await embedder.embed(["REFUNDS, take!"])).toEqual(await embedder.embed(["the refunds take"]));
  });

  test("dimensions change the vectors' length; a text without words is all zeros", async () => {
    const small = lexicalEmbedder({ dimensions: 16 });
    expect(small.dimensions).toBe(16);
    const [vector, empty] = await small.embed(["refunds take days", " ... the "]);
    expect(vector).toHaveLength(16);
    expect(Math.hypot(...vector!)).toBeCloseTo(1, 10);
    expect(empty).toEqual(new Array(16).fill(0));
    expect(await small.embed([])).toEqual([]);
  });

  test("bad options and texts are refused clearly; an aborted signal rejects with its reason", async () => {
    expect(() => lexicalEmbedder({ dimensions: 0 })).toThrow(/lexicalEmbedder\(\) option "dimensions" must be a whole number from 1 to 16384/);
    expect(() => lexicalEmbedder({ dimensions: 1.5 })).toThrow(RangeError);
    expect(() => lexicalEmbedder({ dimension: 3 } as never)).toThrow(/Unknown option "dimension" for lexicalEmbedder\(\)/);
    await expect(lexicalEmbedder().embed("text" as never)).rejects.toThrow(/embed\(texts\) takes an array of strings; got the string "text"/);
    await expect(lexicalEmbedder().embed(["ok", 3] as never)).rejects.toThrow(/text 1 is the number 3, not a string/);
    const reason = new Error("stop");
    await expect(lexicalEmbedder().embed(["x"], { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });
});

describe("openaiEmbedder through the openai SDK", () => {
  let server: EmbeddingsTestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
    vi.unstubAllEnvs();
  });
  async function serve(options: EmbeddingsServerOptions = {}): Promise<EmbeddingsTestServer> {
    server = await EmbeddingsTestServer.start(options);
    return server;
  }

  test("texts go in batches, the dimensions are asked for, and vectors come back in the inputs' order (the server sends them reversed)", async () => {
    const { baseURL } = await serve({ reversed: true });
    const embedder = openaiEmbedder({ apiKey: "test-key", baseURL, dimensions: 64, batchSize: 2 });
    expect(embedder).toMatchObject({ model: "text-embedding-3-small", dimensions: 64 });
    const texts = ["refunds take days", "parcels ship", "reset the password", "invoices monthly", "gift cards"];
    const vectors = await embedder.embed(texts);
    expect(server!.batches).toEqual([texts.slice(0, 2), texts.slice(2, 4), texts.slice(4)]);
    for (const request of server!.requests) {
      expect(request.body).toMatchObject({ model: "text-embedding-3-small", dimensions: 64 });
      expect(request.authorization).toBe("Bearer test-key");
    }
    const expected = await lexicalEmbedder({ dimensions: 64 }).embed(texts);
    expect(vectors).toHaveLength(5);
    for (const [index, vector] of vectors.entries()) {
      expect(vector).toHaveLength(64);
      // Sent as base64 Float32 (the SDK's default), so equal to Float32 precision.
      vector.forEach((value, at) => expect(value).toBeCloseTo(expected[index]![at]!, 6));
    }
  });

  test("a retriever searches with it end to end; a model other than text-embedding-3 is not sent dimensions", async () => {
    const { baseURL } = await serve({ dimensions: 384 });
    const embedder = openaiEmbedder({ apiKey: "test-key", baseURL, model: "nomic-embed-text", dimensions: 384 });
    const docs = memoryRetriever({ embedder });
    await docs.add([
      { id: "refunds", content: "Refunds take five business days." },
      { id: "shipping", content: "Parcels ship within two days." },
    ]);
    const [best] = await docs.search("how long do refunds take", { topK: 1, minRelevance: -1, signal: new AbortController().signal });
    expect(best!.sourceId).toBe("refunds");
    expect(server!.requests.map((request) => request.body.model)).toEqual(["nomic-embed-text", "nomic-embed-text"]);
    expect(server!.requests.every((request) => !("dimensions" in request.body))).toBe(true);
  });

  test("the key and server come from OPENAI_API_KEY and OPENAI_BASE_URL when not given; no key at all is a clear TypeError", async () => {
    const { baseURL } = await serve();
    vi.stubEnv("OPENAI_API_KEY", "env-key");
    vi.stubEnv("OPENAI_BASE_URL", baseURL);
    await openaiEmbedder({ dimensions: 384 }).embed(["hello"]);
    expect(server!.requests[0]!.authorization).toBe("Bearer env-key");
    vi.stubEnv("OPENAI_API_KEY", "");
    expect(() => openaiEmbedder()).toThrow(/openaiEmbedder\(\) has no API key\. Pass \{ apiKey \} or set the OPENAI_API_KEY environment variable/);
    expect(() => openaiEmbedder({ apiKey: "  " })).toThrow(/has no API key \(the apiKey given is blank\)/);
  });

  test("a client given is used as it is", async () => {
    const { baseURL } = await serve();
    const client = new OpenAI({ apiKey: "client-key", baseURL, maxRetries: 0 });
    const [vector] = await openaiEmbedder({ client, model: "text-embedding-3-large", dimensions: 32 }).embed(["hello"]);
    expect(vector).toHaveLength(32);
    expect(server!.requests[0]).toMatchObject({ authorization: "Bearer client-key", body: { model: "text-embedding-3-large", dimensions: 32 } });
  });

  test("a reply with the wrong number of vectors, vectors of the wrong length, bad indexes or NaN is a clear Error naming the model", async () => {
    const cases: [EmbeddingsServerOptions["tamper"], RegExp][] = [
      [(items) => items.slice(1), /openaiEmbedder \("text-embedding-3-small"\): the server returned 1 embedding for 2 inputs/],
      [(items) => [...items, { ...items[0]!, index: 2 }], /the server returned 3 embeddings for 2 inputs/],
      [(items) => items.map((item) => ({ ...item, embedding: item.embedding.slice(0, 10) })), /openaiEmbedder \("text-embedding-3-small"\): the server returned a vector of 10 numbers for input 0, not 64\. Give openaiEmbedder the length of this model's vectors: \{ dimensions: 10 \}/],
      [(items) => items.map((item) => ({ ...item, index: 0 })), /the server's embedding 1 has index the number 0; each of the 2 inputs needs one embedding, indexed 0 to 1/],
      [(items) => items.map((item) => ({ ...item, index: item.index + 5 })), /has index the number 5/],
      [(items) => items.map((item, index) => (index === 1 ? { ...item, embedding: item.embedding.map((value, at) => (at === 3 ? Number.NaN : value)) } : item)), /the server returned a vector for input 1 whose number 3 is NaN, not a finite number/],
      // The SDK decodes base64 itself: a reply it cannot decode fails there.
      [(items) => items.map((item) => ({ index: item.index })), /^openaiEmbedder \("text-embedding-3-small"\) failed: /],
    ];
    for (const [tamper, message] of cases) {
      const { baseURL } = await serve({ tamper });
      await expect(openaiEmbedder({ apiKey: "k", baseURL, dimensions: 64 }).embed(["refunds", "parcels"])).rejects.toThrow(message);
      await server!.close();
      server = undefined;
    }
  });

  test("an HTTP failure is an Error naming the model; an abort rejects with the signal's reason at once", async () => {
    const { baseURL } = await serve({ delayMs: 5_000 });
    await expect(openaiEmbedder({ apiKey: "k", baseURL: `${baseURL}/nowhere`, maxRetries: 0 }).embed(["x"])).rejects.toThrow(/^openaiEmbedder \("text-embedding-3-small"\) failed: 404/);
    const reason = new Error("the call was cancelled");
    const controller = new AbortController();
    const began = performance.now();
    const embedding = openaiEmbedder({ apiKey: "k", baseURL, dimensions: 8 }).embed(["x"], { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 50);
    await expect(embedding).rejects.toBe(reason);
    expect(performance.now() - began).toBeLessThan(2_000);
  });

  test("bad options are refused clearly", () => {
    expect(() => openaiEmbedder({ apiKey: "k", batchSize: 5000 })).toThrow(/option "batchSize" must be a whole number from 1 to 2048/);
    expect(() => openaiEmbedder({ apiKey: "k", dimensions: -1 })).toThrow(/option "dimensions" must be a whole number from 1 to 16384/);
    expect(() => openaiEmbedder({ apiKey: "k", baseURL: "not a url" })).toThrow(/option "baseURL" must be a URL/);
    expect(() => openaiEmbedder({ apiKey: "k", baseurl: "http://x" } as never)).toThrow(/Unknown option "baseurl" for openaiEmbedder\(\) \(it is spelled "baseURL"\)/);
    expect(() => openaiEmbedder({ apiKey: "k", model: "" })).toThrow(/option "model" must name an embedding model/);
  });
});

// The AI SDK is an optional peer dependency: its tests run when it is installed (it is a dev dependency).
const aiTest = await import("ai/test").catch(() => undefined);

describe("aiSdkEmbedder", () => {
  const lexical = lexicalEmbedder({ dimensions: 8 });
  const mockModel = (shorten = 0) =>
    new aiTest!.MockEmbeddingModelV4({
      modelId: "mock-embedding",
      maxEmbeddingsPerCall: 2,
      doEmbed: async ({ values }) => ({ embeddings: (await lexical.embed(values)).map((vector) => vector.slice(shorten)), warnings: [] }),
    });

  test.skipIf(aiTest === undefined)("embeds through embedMany, in the model's batches, in order; its model is the model's id", async () => {
    const model = mockModel();
    const embedder = aiSdkEmbedder(model, { dimensions: 8 });
    expect(embedder).toMatchObject({ model: "mock-embedding", dimensions: 8 });
    const texts = ["refunds take days", "parcels ship", "reset password"];
    const controller = new AbortController();
    expect(await embedder.embed(texts, { signal: controller.signal })).toEqual(await lexical.embed(texts));
    expect(model.doEmbedCalls.map((call) => call.values)).toEqual([texts.slice(0, 2), texts.slice(2)]);
    expect(model.doEmbedCalls[0]!.abortSignal).toBeInstanceOf(AbortSignal);
    expect(model.doEmbedCalls[0]!.dimensions).toBeUndefined();
    expect(await embedder.embed([])).toEqual([]);

    const asking = mockModel();
    await aiSdkEmbedder(asking, { dimensions: 8, requestDimensions: true }).embed(["x"]);
    expect(asking.doEmbedCalls[0]!.dimensions).toBe(8);
  });

  test.skipIf(aiTest === undefined)("vectors of the wrong length are a TypeError naming the model; an aborted signal rejects with its reason", async () => {
    await expect(aiSdkEmbedder(mockModel(2), { dimensions: 8 }).embed(["refunds"])).rejects.toThrow(/The embedder "mock-embedding" returned a vector of 6 numbers for text 0, not 8/);
    const reason = new Error("stop");
    const model = mockModel();
    await expect(aiSdkEmbedder(model, { dimensions: 8 }).embed(["x"], { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(model.doEmbedCalls).toHaveLength(0);
  });

  test("a model that is not one, or no dimensions, is refused clearly", () => {
    expect(() => aiSdkEmbedder({} as never, { dimensions: 8 })).toThrow(/aiSdkEmbedder\(\) takes an AI SDK embedding model, such as openai\.embedding\("text-embedding-3-small"\)/);
    expect(() => aiSdkEmbedder("openai/text-embedding-3-small", undefined as never)).toThrow(/aiSdkEmbedder\(\) needs \{ dimensions \}: the length of the model's vectors/);
    expect(() => aiSdkEmbedder("openai/text-embedding-3-small", {} as never)).toThrow(/option "dimensions" must be a whole number from 1 to 16384/);
    expect(aiSdkEmbedder("openai/text-embedding-3-small", { dimensions: 1536 }).model).toBe("openai/text-embedding-3-small");
  });
});
