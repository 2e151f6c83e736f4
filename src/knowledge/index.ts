/** What other folders may use of knowledge/: they import it from here, never from its files. */
export { assembleKnowledge, sourceNames } from "./assemble.ts";
export { LEXICAL_MODEL, aiSdkEmbedder, lexicalEmbedder, openaiEmbedder } from "./embedders.ts";
export type { AISDKEmbedderOptions, AISDKEmbeddingModel, LexicalEmbedderOptions, OpenAIEmbedderOptions } from "./embedders.ts";
export { memoryRetriever } from "./memory-retriever.ts";
export type { MemoryRetrieverOptions } from "./memory-retriever.ts";
export { pgvectorRetriever, type PgPoolLike, type PgvectorDatabase, type PgvectorRetrieverOptions } from "./pgvector-retriever.ts";
export { sqliteRetriever } from "./sqlite-retriever.ts";
export type { SqliteRetrieverOptions } from "./sqlite-retriever.ts";
export type { KnowledgeAssembly, KnowledgeRecord, KnowledgeSegment, SegmentResult } from "./assemble.ts";
export { KNOWLEDGE_LIMITS, fromRetrieval, fromState, literal, readKnowledge } from "./sources.ts";
export type { KnowledgeCall, KnowledgeSource, NamedSource, RetrievalOptions, SourceOptions } from "./sources.ts";
export type { Embedder, KnowledgeResult, MetadataFilter, Passage, PassageRetriever, Retriever, SearchOptions } from "./types.ts";
