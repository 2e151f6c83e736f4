/** What other folders may use of tools/: they import it from here, never from its files. */
export { declareTools } from "./declarations.ts";
export { NO_TOOLS, grantTools } from "./grant.ts";
export type { GrantedTool, GrantedTools, ToolEffect } from "./grant.ts";
export { copyToolInput } from "./input.ts";
export { JsonSchemaCompiler, SchemaProblem } from "./json-schema.ts";
export type { SchemaCheck } from "./json-schema.ts";
export { McpConnectionError, mcpTools } from "./mcp.ts";
export type { McpClient, McpHttpServer, McpServer, McpStdioServer, McpToolSet, McpToolsOptions } from "./mcp.ts";
export { agentsWaitingNow, runWhileWaiting, withAgents } from "./reentry.ts";
export { copyToolResult } from "./result.ts";
export { schemaToType } from "./schema-type.ts";
export { jsonSchemaProblem, readSchema } from "./schema.ts";
export type { ReadSchema } from "./schema.ts";
export { ToolCallLog, boundedInput } from "./tool-calls.ts";
export type { EffectState, ToolCallEntry, ToolCallRecord } from "./tool-calls.ts";
export { DEFAULT_TOOL_TIMEOUT_MS } from "./tool.ts";
export type { Tool, ToolAnnotations, ToolExecuteOptions, ToolSet, Tools } from "./tool.ts";
