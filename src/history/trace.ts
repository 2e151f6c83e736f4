import type { HistoryRecord } from "./record.ts";

/** One call in a call tree: its record, the agent that made it, and the calls its program made. */
export type TraceNode = HistoryRecord & {
  readonly role: string;
  readonly agent_id: string;
  readonly children: readonly TraceNode[];
};

/** A record of the trace and where it came from; `order` breaks ties of equal timestamps. */
export interface TraceEntry {
  readonly record: HistoryRecord;
  readonly role: string;
  readonly agentId: string;
  readonly order: number;
}

/**
 * The call tree of a trace's records: every record once, parents before their children,
 * children nested by `parent_call_id` and ordered as the calls were made. A record whose parent
 * is not among them (forgotten, or another trace's) starts a tree of its own.
 */
export function buildTrace(entries: readonly TraceEntry[]): readonly TraceNode[] {
  const sorted = [...entries].sort((a, b) => Date.parse(a.record.timestamp) - Date.parse(b.record.timestamp) || a.order - b.order);
  const nodes = new Map<string, { node: TraceNode; children: TraceNode[] }>();
  for (const { record, role, agentId } of sorted) {
    if (nodes.has(record.call_id)) continue;
    const children: TraceNode[] = [];
    nodes.set(record.call_id, { node: { ...record, role, agent_id: agentId, children }, children });
  }
  const roots: TraceNode[] = [];
  for (const { node } of nodes.values()) {
    const parent = typeof node.parent_call_id === "string" ? nodes.get(node.parent_call_id) : undefined;
    if (parent !== undefined && parent.node !== node) parent.children.push(node);
    else roots.push(node);
  }
  const ordered: TraceNode[] = [];
  const visit = (node: TraceNode) => {
    ordered.push(node);
    for (const child of node.children) visit(child);
  };
  for (const root of roots) visit(root);
  for (const node of ordered) Object.freeze(node.children);
  return Object.freeze(ordered.map((node) => Object.freeze(node)));
}
