/**
 * A throwaway PostgreSQL with pgvector for tests, with no server binaries: PGlite (PostgreSQL
 * compiled to WASM) with its pgvector extension, served over TCP on 127.0.0.1 by
 * `@electric-sql/pglite-socket`, so that `pg` talks the real wire protocol to it. It runs in a
 * child process (this file, run with `--serve`), so its single-threaded WASM does not block the
 * test's event loop and a test can abort a query while the server is busy with it.
 *
 * PGlite is one database session: pglite-socket multiplexes the connections it accepts (at most
 * `maxConnections`, default 4) onto it query by query, keeping a connection's transaction to that
 * connection. It ignores CancelRequests (a cancelled query runs to its end) and accepts any user
 * and password. The database lives in memory until `stop()`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

export interface PgliteServer {
  /** A postgres:// URL of the server's one database. */
  readonly url: string;
  readonly port: number;
  /** Stops the server (its database is gone). */
  stop(): Promise<void>;
}

export interface PgliteServerOptions {
  /** Connections the server accepts at once; past it, it closes new ones. Default: 4. */
  readonly maxConnections?: number;
  /** Load pgvector into the database (CREATE EXTENSION still needed). Default: true. */
  readonly vector?: boolean;
}

const READY = "pglite-server listening on port ";

/** Starts a PGlite server in a child process on a free port of 127.0.0.1. */
export async function startPglite(options: PgliteServerOptions = {}): Promise<PgliteServer> {
  const maxConnections = options.maxConnections ?? 4;
  const vector = options.vector ?? true;
  const child = spawn(process.execPath, ["--no-warnings", fileURLToPath(import.meta.url), "--serve", String(maxConnections), vector ? "vector" : "plain"], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`the PGlite server did not start within 30 s: ${err || out}`)), 30_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(error);
    };
    child.stdout!.on("data", () => {
      const line = out.split("\n").find((one) => one.startsWith(READY));
      if (line === undefined) return;
      clearTimeout(timer);
      resolve(Number(line.slice(READY.length)));
    });
    void exited.then((code) => fail(new Error(`the PGlite server ended (exit ${String(code)}) before it listened: ${err || out}`)));
  });
  let stopping: Promise<void> | undefined;
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    port,
    stop: () => (stopping ??= stop(child, exited)),
  };
}

async function stop(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.stdin!.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** The child: a PGlite in memory with pgvector, served until its standard input ends. */
async function serve(maxConnections: number, withVector: boolean): Promise<void> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  const db = withVector ? await PGlite.create({ extensions: { vector: (await import("@electric-sql/pglite-pgvector")).vector } }) : await PGlite.create();
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections });
  await server.start();
  const port = Number(server.getServerConn().split(":").pop());
  process.stdout.write(`${READY}${port}\n`);
  process.stdin.resume();
  process.stdin.once("end", () => {
    void (async () => {
      await server.stop();
      await db.close();
      process.exit(0);
    })();
  });
}

if (process.argv[2] === "--serve" && import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await serve(Number(process.argv[3]), process.argv[4] === "vector");
}
