/**
 * A throwaway PostgreSQL server for tests: initdb on a temporary data directory, started on a
 * free loopback port, stopped (and its files removed) afterwards. PostgreSQL refuses to run as
 * root, so as root it runs as the `postgres` user. Where no server binaries exist, tests that
 * need one skip with a message saying how to run them, except under `CI=true`, where they must run.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import pg from "pg";

/** Where Debian puts the server binaries when they are not on the PATH. */
const DEBIAN_BINARIES = "/usr/lib/postgresql";

function findBinary(name: string): string | undefined {
  const onPath = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim();
  if (onPath !== "") return onPath;
  if (!existsSync(DEBIAN_BINARIES)) return undefined;
  for (const version of readdirSync(DEBIAN_BINARIES).sort().reverse()) {
    const candidate = join(DEBIAN_BINARIES, version, "bin", name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Why PostgreSQL tests cannot run here, or undefined when they can. */
export function postgresUnavailable(): string | undefined {
  if (findBinary("initdb") === undefined || findBinary("pg_ctl") === undefined) {
    return "PostgreSQL server binaries (initdb, pg_ctl) were not found. Install Debian's postgresql package (apt-get install postgresql) to run these tests.";
  }
  if (userInfo().uid === 0 && spawnSync("id", ["postgres"]).status !== 0) return "running as root needs a postgres user to start the server as";
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface PostgresServer {
  /** A connection URL for a fresh database on the server. */
  readonly url: string;
  /** A new, empty database on the server, as a URL. */
  database(name: string): Promise<string>;
  stop(): void;
}

/** Starts a server; it runs until `stop()`. */
export async function startPostgres(): Promise<PostgresServer> {
  const initdb = findBinary("initdb") as string;
  const pgCtl = findBinary("pg_ctl") as string;
  const asRoot = userInfo().uid === 0;
  const run = (command: string, args: string[]) => (asRoot ? execFileSync("runuser", ["-u", "postgres", "--", command, ...args], { stdio: "pipe" }) : execFileSync(command, args, { stdio: "pipe" }));
  const directory = mkdtempSync(join(tmpdir(), "improv-postgres-"));
  const data = join(directory, "data");
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    chownSync(directory, uid, gid);
  }
  chmodSync(directory, 0o700);
  run(initdb, ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
  const port = await freePort();
  // Room for the many-agents load test: four processes, each a pool of up to 10 connections and
  // 4 turn connections, beside the connections of the process that starts them.
  const options = `-p ${port} -k ${directory} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  run(pgCtl, ["-D", data, "-o", options, "-l", join(directory, "server.log"), "-w", "-t", "30", "start"]);
  const base = `postgres://postgres@127.0.0.1:${port}`;
  let stopped = false;
  return {
    url: `${base}/postgres`,
    async database(name: string): Promise<string> {
      const client = new pg.Client({ connectionString: `${base}/postgres` });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name.replace(/"/g, "")}"`);
      } finally {
        await client.end();
      }
      return `${base}/${name}`;
    },
    stop(): void {
      if (stopped) return;
      stopped = true;
      try {
        run(pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    },
  };
}
