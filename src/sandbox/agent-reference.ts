/**
 * Agents a program hands back in its value. The encoder writes an `Agent` tag only
 * for an agent the runtime's `delegate` made; the decoder (`value-codec.ts`) reads it as an
 * {@link AgentReference}, which the call that receives the value turns into the live child
 * agent (the application) or its text (a program, a record).
 */

/**
 * An agent a program made with `delegate` and handed back in its value (the encoder's `Agent`
 * tag, which only the runtime writes): its role and the options it was made with, as encoded.
 * The call that receives it makes it the live child agent (the application) or its text (a
 * program, a record).
 */
export class AgentReference {
  readonly role: string;
  readonly options: string | null;
  constructor(role: string, options: string | null) {
    this.role = role;
    this.options = options;
  }

  /** How it reads where no live agent can be handed out. */
  get text(): string {
    return `[Agent ${this.role}]`;
  }
}
// Records name a value's class: an agent is an "Agent".
Object.defineProperty(AgentReference, "name", { value: "Agent" });

/** Whether a value's encoded text may hold an agent (a cheap look before a walk). */
export function mayHoldAgents(valueText: string): boolean {
  return valueText.includes('["Agent",');
}

/**
 * Replaces every {@link AgentReference} in a decoded value by what `replace` makes of it, in
 * place (a decoded value is the caller's own copy; shared parts and cycles are walked once).
 */
export function replaceAgentReferences(value: unknown, replace: (reference: AgentReference) => unknown): unknown {
  if (value instanceof AgentReference) return replace(value);
  const seen = new Set<object>();
  const stack: unknown[] = [value];
  const swap = (item: unknown) => {
    if (item instanceof AgentReference) return replace(item);
    if (typeof item === "object" && item !== null) stack.push(item);
    return item;
  };
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index += 1) if (index in node) node[index] = swap(node[index]);
    } else if (node instanceof Map) {
      for (const [key, item] of [...node]) node.set(key, swap(item));
    } else if (node instanceof Set) {
      const items = [...node];
      node.clear();
      for (const item of items) node.add(swap(item));
    } else if (Object.getPrototypeOf(node) === Object.prototype || Object.getPrototypeOf(node) === null) {
      for (const key of Object.keys(node)) (node as Record<string, unknown>)[key] = swap((node as Record<string, unknown>)[key]);
    }
  }
  return value;
}
