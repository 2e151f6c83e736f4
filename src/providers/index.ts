/** What other folders may use of providers/: they import it from here, never from its files. */
export { AISDKProvider } from "./ai-sdk.ts";
export type { AISDKLanguageModel, AISDKProviderOptions } from "./ai-sdk.ts";
export { AnthropicProvider, DEFAULT_ANTHROPIC_MAX_TOKENS, DEFAULT_ANTHROPIC_MODEL } from "./anthropic.ts";
export type { AnthropicClient, AnthropicProviderOptions, AnthropicReplyMode } from "./anthropic.ts";
export { DEFAULT_OPENAI_MODEL, OpenAIProvider } from "./openai.ts";
export type { OpenAIProviderOptions } from "./openai.ts";
export { ProviderError, delay, isProvider, providerModel, providerName } from "./provider.ts";
export type { Generation, GenerationRequest, GenerationUsage, Provider, ProviderFailureKind, ProviderOptions } from "./provider.ts";
export type { HttpProviderOptions } from "./provider-options.ts";
export { DEFAULT_MAX_CONCURRENT_REQUESTS, gateOf, MAX_PAUSE_MS } from "./request-gate.ts";
export { ScriptedProvider } from "./scripted.ts";
export type { ScriptedCall, ScriptedEntry, ScriptedProgram, ScriptedProviderOptions } from "./scripted.ts";
export { TokenBudget } from "./token-budget.ts";
export { CostBudget, costOf, readPricing } from "./cost.ts";
export type { ModelPrice, Pricing } from "./cost.ts";
