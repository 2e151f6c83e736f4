/** The demo's small product catalogue, and its one search: served by the demo's MCP server, or in-process without the MCP SDK. */

export const PRODUCTS = [
  { sku: "KTL-1", name: "Kettle, 1.7 l", priceUsd: 39.5 },
  { sku: "MUG-2", name: "Stoneware mug", priceUsd: 12 },
  { sku: "TEA-9", name: "Green tea, 100 g", priceUsd: 8.25 },
] as const;

export const SEARCH_DESCRIPTION = "Products whose name contains the query (case-insensitive), with their prices in US dollars.";

/** The products whose name contains `query`, ignoring case. */
export function searchProducts(query: string): { items: (typeof PRODUCTS)[number][] } {
  const wanted = query.toLowerCase();
  return { items: PRODUCTS.filter((product) => product.name.toLowerCase().includes(wanted)) };
}
