import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { AGENT_OPTION_NAMES, DEFAULT_OPTIONS, RESERVED_NAMES } from "../src/index.ts";
import { ENV_NAMES } from "../src/shared/env.ts";

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8");

describe("docs match the code", () => {
  test("every option is documented in docs/configuration.md, and every documented option exists", () => {
    const documented = [...read("docs/configuration.md").matchAll(/^#### (\w+) \(/gm)].map((match) => match[1]);
    expect(documented).toEqual(AGENT_OPTION_NAMES);
  });

  test("the documented defaults are the code's defaults", () => {
    const configuration = read("docs/configuration.md");
    for (const [name, value] of Object.entries(DEFAULT_OPTIONS)) {
      const section = configuration.split(`#### ${name} (`)[1]?.split("####")[0] ?? "";
      const shown = typeof value === "object" ? `{ ${Object.entries(value).map(([key, item]) => `${key}: ${typeof item === "string" ? JSON.stringify(item) : item}`).join(", ")} }` : typeof value === "string" ? JSON.stringify(value) : String(value);
      expect(section, name).toContain(`Default: \`${shown}\``);
    }
  });

  test("every environment variable is documented, in the README's options table too where it sets a default", () => {
    const configuration = read("docs/configuration.md");
    for (const name of ENV_NAMES) expect(configuration).toContain(`\`${name}\``);
    const readme = read("README.md");
    for (const name of AGENT_OPTION_NAMES) expect(readme).toContain(`| \`${name}\` |`);
  });

  test("the README names every reserved name", () => {
    const readme = read("README.md");
    for (const name of RESERVED_NAMES) expect(readme).toContain(`\`${name}\``);
  });

  test("the README links every page in docs/", () => {
    const readme = read("README.md");
    for (const page of ["architecture", "configuration", "programs", "history", "storage", "observability", "security", "performance", "testing"]) {
      expect(readme).toContain(`docs/${page}.md`);
    }
  });
});
