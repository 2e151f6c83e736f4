/**
 * Names in a generated program, resolved with eslint-scope: the variable an identifier means,
 * the string a constant key spells, a real global's member (`Object.groupBy`), and the program's
 * own functions a callee or callback names.
 */
import { analyze, type Reference, type Variable } from "eslint-scope";
import { constantString, isFunction, unwrap, type AnyNode } from "./syntax.ts";

/** How far a name is followed to the function it is bound to (`const f = g`, `const g = o.h`, …). */
const MAX_FUNCTION_ALIASES = 4;

export class ProgramNames {
  readonly #references = new Map<AnyNode, Reference>();
  readonly #bindings = new Map<AnyNode, Variable>();
  readonly #programArguments: Variable | undefined;

  constructor(ast: AnyNode) {
    // "commonjs" wraps the program in a function scope, as the sandbox does.
    const scopes = analyze(ast as never, { ecmaVersion: 2025, sourceType: "commonjs" });
    for (const scope of scopes.scopes) {
      for (const reference of scope.references) this.#references.set(reference.identifier as AnyNode, reference);
      for (const variable of scope.variables) for (const identifier of variable.identifiers) this.#bindings.set(identifier as AnyNode, variable);
    }
    this.#programArguments = scopes.scopes[1]?.set.get("arguments");
  }

  /** The variable an identifier reads or declares; undefined for a global (or a name that is neither). */
  variableOf(identifier: AnyNode): Variable | undefined {
    return this.#references.get(identifier)?.resolved ?? this.#bindings.get(identifier) ?? undefined;
  }

  /** Whether `identifier` reads a name no scope of the program declares (the agent's `context`, `Object`, …). */
  isGlobal(identifier: AnyNode): boolean {
    return this.#references.get(identifier)?.resolved === null;
  }

  /** Whether `identifier` reads the program's own `arguments` (at its top level). */
  isProgramArguments(identifier: AnyNode): boolean {
    return this.#programArguments !== undefined && this.#references.get(identifier)?.resolved === this.#programArguments;
  }

  /** The identifiers that read the variable `identifier` names. */
  readsOf(identifier: AnyNode): AnyNode[] {
    return (this.variableOf(identifier)?.references ?? []).filter((reference) => reference.isRead()).map((reference) => reference.identifier as AnyNode);
  }

  propertyName(member: AnyNode): string | undefined {
    if (!member.computed) return member.property.type === "Identifier" ? member.property.name : undefined;
    return this.constant(member.property);
  }

  /** The key an object literal's or pattern's property names, when it is known. */
  keyOf(property: AnyNode): string | undefined {
    if (property.computed) return this.constant(property.key);
    return property.key.type === "Identifier" ? property.key.name : property.key.type === "Literal" ? String(property.key.value) : undefined;
  }

  constant(node: AnyNode): string | undefined {
    return constantString(node, (identifier) => this.constInit(identifier));
  }

  /** The initialiser of the `const` that binds `identifier`, if it is one. */
  constInit(identifier: AnyNode): AnyNode | undefined {
    const definition = this.variableOf(identifier)?.defs[0];
    const declarator = definition?.node as AnyNode | undefined;
    if (definition?.type !== "Variable" || (definition.parent as AnyNode | undefined)?.kind !== "const" || !declarator?.init || declarator.id !== definition.name) return undefined;
    return declarator.init;
  }

  /** The initialiser of the variable `identifier` names, when it is declared with one (`let`, `const` or `var`). */
  declaredInit(identifier: AnyNode): AnyNode | undefined {
    const definition = this.variableOf(identifier)?.defs[0];
    const declarator = definition?.node as AnyNode | undefined;
    return definition?.type === "Variable" && declarator?.id === definition.name ? (declarator?.init ?? undefined) : undefined;
  }

  /** `Object.groupBy`-style names, when the object is the real global (not a local variable). */
  globalMember(member: AnyNode): string | undefined {
    if (member.type !== "MemberExpression" || member.object.type !== "Identifier" || this.variableOf(member.object)) return undefined;
    const name = this.propertyName(member);
    return name === undefined ? undefined : `${member.object.name}.${name}`;
  }

  /**
   * The program's own function `node` names: a function expression, a declared function, a
   * `const` bound to one (or to another such name), or a method of a `const` object literal.
   */
  localFunction(node: AnyNode, depth = 0): AnyNode | undefined {
    const expression = unwrap(node);
    if (isFunction(expression)) return expression;
    if (depth > MAX_FUNCTION_ALIASES) return undefined;
    if (expression.type === "MemberExpression") {
      const object = unwrap(expression.object);
      const literal = object.type === "Identifier" ? this.constInit(object) : undefined;
      const name = this.propertyName(expression);
      if (literal?.type !== "ObjectExpression" || name === undefined) return undefined;
      const property = (literal.properties as AnyNode[]).find((candidate) => candidate.type === "Property" && this.keyOf(candidate) === name);
      return property ? this.localFunction(property.value, depth + 1) : undefined;
    }
    if (expression.type !== "Identifier") return undefined;
    const definition = this.variableOf(expression)?.defs[0];
    if (!definition) return undefined;
    const defined = definition.node as AnyNode;
    if (definition.type === "FunctionName") return defined;
    if (definition.type === "Variable" && defined.init && (isFunction(defined.init) || defined.init.type === "Identifier" || defined.init.type === "MemberExpression")) {
      return this.localFunction(defined.init, depth + 1);
    }
    return undefined;
  }
}
