/**
 * The demo's MCP server: a small product catalogue, served over stdio with the official MCP
 * SDK (`node demo-catalogue.ts`). The demo starts it itself and grants its tools to an agent.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";

const PRODUCTS = [
  { sku: "KTL-1", name: "Kettle, 1.7 l", priceUsd: 39.5 },
  { sku: "MUG-2", name: "Stoneware mug", priceUsd: 12 },
  { sku: "TEA-9", name: "Green tea, 100 g", priceUsd: 8.25 },
] as const;

const server = new Server({ name: "catalogue", version: "1.0.0" }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    {
      name: "search",
      description: "Products whose name contains the query (case-insensitive), with their prices in US dollars.",
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
  const query = String(request.params.arguments?.query ?? "").toLowerCase();
  const items = PRODUCTS.filter((product) => product.name.toLowerCase().includes(query));
  return { structuredContent: { items }, content: [{ type: "text", text: JSON.stringify({ items }) }] };
});

await server.connect(new StdioServerTransport());
