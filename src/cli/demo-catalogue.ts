/**
 * The demo's MCP server: a small product catalogue, served over stdio with the official MCP
 * SDK (`node demo-catalogue.ts`). The demo starts it itself and grants its tools to an agent.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { SEARCH_DESCRIPTION, searchProducts } from "./demo-products.ts";


const server = new Server({ name: "catalogue", version: "1.0.0" }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    {
      name: "search",
      description: SEARCH_DESCRIPTION,
      inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
      outputSchema: {
        type: "object",
        properties: { items: { type: "array", items: { type: "object", properties: { sku: { type: "string" }, name: { type: "string" }, priceUsd: { type: "number" } }, required: ["sku", "name", "priceUsd"] } } },
        required: ["items"],
      },
      annotations: { readOnlyHint: true },
    },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, (request): CallToolResult => {
  if (request.params.name !== "search") return { isError: true, content: [{ type: "text", text: `No tool named ${request.params.name}.` }] };
  const { items } = searchProducts(String(request.params.arguments?.query ?? ""));
  return { structuredContent: { items }, content: [{ type: "text", text: JSON.stringify({ items }) }] };
});

await server.connect(new StdioServerTransport());
