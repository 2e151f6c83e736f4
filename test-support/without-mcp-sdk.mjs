/**
 * Loaded with `node --import` to run improv as where the optional MCP SDK is not installed:
 * every import of `@modelcontextprotocol/sdk` fails as Node fails for a missing package.
 */
import { registerHooks } from "node:module";

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === "@modelcontextprotocol/sdk" || specifier.startsWith("@modelcontextprotocol/sdk/")) {
      throw Object.assign(new Error(`Cannot find package '@modelcontextprotocol/sdk' imported from ${context.parentURL ?? "the entry"}`), { code: "ERR_MODULE_NOT_FOUND" });
    }
    return nextResolve(specifier, context);
  },
});
