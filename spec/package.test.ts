import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, test } from "vitest";

const root = new URL("..", import.meta.url).pathname;
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
/** Where an older Node.js may be found on a machine (Debian's package puts it in /usr/bin). */
const OLDER_NODE = ["/usr/bin/node", "/usr/local/bin/node"];

const npm = (args: string[], cwd: string) =>
  spawnSync("npm", args, { cwd, encoding: "utf8", timeout: 240_000, env: { ...process.env, npm_config_loglevel: "warn", npm_config_fund: "false", npm_config_audit: "false" } });

describe("the package as users get it", () => {
  test("improv --version prints the package's version", () => {
    const out = execFileSync(process.execPath, [join(root, "bin/improv.js"), "--version"], { encoding: "utf8" });
    expect(out.trim()).toBe(version);
  });

  test("the packed tarball installs without warnings about its own scripts; import, require and the CLI work; source maps carry their sources", () => {
    const where = mkdtempSync(join(tmpdir(), "improv-package-"));
    const packed = npm(["pack", "--pack-destination", where, "--json"], root);
    expect(packed.status, packed.stderr).toBe(0);
    const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as { filename: string }[];
    const app = join(where, "app");
    execFileSync("mkdir", ["-p", app]);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", type: "module" }));
    const installed = npm(["install", "--prefer-offline", join(where, filename)], app);
    expect(installed.status, installed.stderr).toBe(0);
    expect(installed.stderr).not.toMatch(/improv@/);

    const program = `const { Agent, ScriptedProvider } = MODULE;
      const calc = Agent.for("calculator", { provider: new ScriptedProvider({ programs: { add: "args[0] + args[1]" } }) });
      calc.add(2, 3).then((r) => console.log(r.value));`;
    const run = (type: string, code: string) => spawnSync(process.execPath, [`--input-type=${type}`, "-e", code], { cwd: app, encoding: "utf8", timeout: 60_000 });
    const viaImport = run("module", `import * as m from "improv"; ${program.replace("MODULE", "m")}`);
    expect(viaImport.stdout.trim(), viaImport.stderr).toBe("5");
    const viaRequire = run("commonjs", program.replace("MODULE", 'require("improv")'));
    expect(viaRequire.stdout.trim(), viaRequire.stderr).toBe("5");
    expect(viaRequire.stderr).toBe("");
    const cli = spawnSync(join(app, "node_modules/.bin/improv"), ["--version"], { encoding: "utf8" });
    expect(cli.stdout.trim()).toBe(version);

    // On an older Node.js (the machine's own, when it has one), importing the package or running its CLI says which Node.js it needs, first.
    const older = OLDER_NODE.find((path) => existsSync(path) && Number(execFileSync(path, ["-p", "process.versions.node.split('.')[0]"], { encoding: "utf8" }).trim()) < 24);
    if (older !== undefined) {
      const imported = spawnSync(older, ["--input-type=module", "-e", 'await import("improv")'], { cwd: app, encoding: "utf8", timeout: 60_000 });
      expect(imported.status).not.toBe(0);
      expect(imported.stderr).toMatch(/Error: improv needs Node\.js 24 or later; this is Node\.js \d+\.\d+\.\d+\. Install Node\.js 24 \(nvm install 24, or from nodejs\.org\), or run your script with npm's Node\.js 24: npx -y node@24 your-script\.js\./);
      const oldCli = spawnSync(older, [join(app, "node_modules/.bin/improv"), "--version"], { encoding: "utf8", timeout: 60_000 });
      expect(oldCli).toMatchObject({ status: 1, stdout: "" });
      expect(oldCli.stderr).toMatch(/^improv needs Node\.js 24 or later; this is Node\.js \d+/);
    }

    // The published types, in an application compiled with exactOptionalPropertyTypes: an option
    // may be passed straight from a variable that may be undefined.
    writeFileSync(
      join(app, "check.ts"),
      `import { Agent, AISDKProvider, AnthropicProvider, OpenAIProvider, ScriptedProvider, SqliteStore, TokenBudget, type AgentOptions, type AISDKLanguageModel } from "improv";
       const model: string | undefined = process.env.IMPROV_MODEL;
       const limit: number | undefined = process.env.LIMIT === undefined ? undefined : Number(process.env.LIMIT);
       const options: AgentOptions = { model, executionTimeoutMs: limit, log: undefined, store: undefined, egress: undefined, purpose: undefined, methods: { add: { description: undefined, returns: undefined } } };
       const calc = Agent.for("calculator", options);
       new OpenAIProvider({ apiKey: process.env.OPENAI_API_KEY, baseURL: process.env.OPENAI_BASE_URL, model });
       new ScriptedProvider({ programs: {}, model });
       const claude = new AnthropicProvider({ apiKey: process.env.ANTHROPIC_API_KEY, baseURL: undefined, model, maxTokens: limit, replyMode: undefined, maxConcurrentRequests: limit });
       declare const languageModel: AISDKLanguageModel;
       new AISDKProvider({ model: languageModel, structuredOutput: undefined, name: model });
       Agent.for("writer", { provider: [claude, new OpenAIProvider()], maxTokens: limit ?? new TokenBudget(1000) });
       new SqliteStore(":memory:", { busyTimeoutMs: limit, durability: undefined, closeTimeoutMs: undefined });
       void Agent.call(calc, "add", [], { signal: undefined, callTimeoutMs: limit });
       void Agent.close(calc, { timeoutMs: limit });\n`,
    );
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({ compilerOptions: { strict: true, exactOptionalPropertyTypes: true, module: "nodenext", moduleResolution: "nodenext", target: "es2023", types: ["node"], noEmit: true, typeRoots: [join(root, "node_modules/@types")] }, files: ["check.ts"] }));
    const typed = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(app, "tsconfig.json")], { cwd: app, encoding: "utf8", timeout: 120_000 });
    expect(typed.stdout + typed.stderr).toBe("");

    // Every README snippet, as a user's TypeScript file would hold it, under the settings `tsc --init` writes (strict, noUncheckedIndexedAccess, exactOptionalPropertyTypes, verbatimModuleSyntax).
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const snippets = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => ({ code: match[1]!, line: readme.slice(0, match.index).split("\n").length }));
    expect(snippets.length).toBeGreaterThanOrEqual(7);
    for (const { code, line } of snippets) writeFileSync(join(app, `readme-${line}.ts`), code);
    for (const dependency of ["zod", "@ai-sdk/openai-compatible"]) {
      mkdirSync(dirname(join(app, "node_modules", dependency)), { recursive: true });
      if (!existsSync(join(app, "node_modules", dependency))) symlinkSync(join(root, "node_modules", dependency), join(app, "node_modules", dependency));
    }
    writeFileSync(join(app, "package.json"), JSON.stringify({ ...JSON.parse(readFileSync(join(app, "package.json"), "utf8")), type: "module" }));
    const initSettings = { module: "nodenext", target: "esnext", types: ["node"], typeRoots: [join(root, "node_modules/@types")], noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true, strict: true, verbatimModuleSyntax: true, isolatedModules: true, noUncheckedSideEffectImports: true, moduleDetection: "force", skipLibCheck: true, noEmit: true };
    writeFileSync(join(app, "tsconfig.readme.json"), JSON.stringify({ compilerOptions: initSettings, files: snippets.map(({ line }) => `readme-${line}.ts`) }));
    const readmeTyped = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(app, "tsconfig.readme.json")], { cwd: app, encoding: "utf8", timeout: 120_000 });
    expect(readmeTyped.stdout + readmeTyped.stderr).toBe("");

    const dist = join(app, "node_modules/improv/dist");
    const maps = (readdirSync(dist, { recursive: true, encoding: "utf8" }) as string[]).filter((file) => file.endsWith(".map"));
    expect(maps.length).toBeGreaterThan(10);
    for (const file of maps) {
      const map = JSON.parse(readFileSync(join(dist, file), "utf8")) as { sources: string[]; sourcesContent?: string[] };
      expect(map.sourcesContent?.length, file).toBe(map.sources.length);
    }
  }, 300_000);
});
