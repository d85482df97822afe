/**
 * Test helper: a throwaway `redis-server` on a free loopback port, without persistence, in its
 * own temporary directory. Never the shared Redis on 6379. With `persistence` it keeps an
 * append-only file in a directory of the caller's, which every restart loads again.
 */
import { spawn } from "node:child_process";
import { accessSync, constants as fsConstants } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { freePort } from "./free-port.js";

/** A running test Redis. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Shut the server down (no save) and wait until the process has exited. Idempotent. */
  stop(): Promise<void>;
  /** Start it again on the same port (stopping it first if it runs); resolves once it answers PING. */
  restart(): Promise<void>;
  /** SIGKILL (no shutdown of any kind) and wait until the process has exited. Idempotent. */
  kill(): Promise<void>;
  /** Resolves once the running process has exited (e.g. after a SHUTDOWN sent by the caller); at once when none runs. */
  exited(): Promise<void>;
  /** The running process's pid (undefined while stopped). */
  pid(): number | undefined;
}

/** Options of `startRedisServer`; none: no persistence at all, a fresh temporary directory per start. */
export interface RedisServerOptions {
  /**
   * Append-only file persistence (`appendonly yes`) in `dir`, the caller's directory: it is kept
   * across `stop`, `kill` and `restart` (a restart reloads it) and never deleted by this helper.
   * No RDB snapshots either way.
   */
  readonly persistence?: {
    readonly dir: string;
    readonly appendfsync: "always" | "everysec";
  };
  /** More command-line settings, e.g. `["--maxmemory-policy", "allkeys-lru"]` or cluster mode. */
  readonly args?: readonly string[];
  /**
   * A directory of the caller's that is kept across stops and restarts (a cluster node's
   * nodes.conf); default: a fresh temporary one per start (or persistence's).
   */
  readonly dir?: string;
  /**
   * A configuration file (absolute path) given before every other setting, e.g. a Sentinel's,
   * which the server rewrites as it learns (`args: ["--sentinel"]`).
   */
  readonly configFile?: string;
}

const START_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 3_000;

/** Start a fresh redis-server; rejects with a clear message when `redis-server` is not on PATH. */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const binary = findOnPath("redis-server");
  if (binary === undefined) {
    throw new Error("redis-server is not on PATH: the Redis store tests need it (Debian: apt-get install redis-server)");
  }
  const port = await freePort();
  let proc: RunningRedis | undefined = await launch(binary, port, options);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop(): Promise<void> {
      const p = proc;
      proc = undefined;
      if (p !== undefined) await p.stop();
    },
    async restart(): Promise<void> {
      const p = proc;
      proc = undefined;
      if (p !== undefined) await p.stop();
      proc = await launch(binary, port, options);
    },
    async kill(): Promise<void> {
      const p = proc;
      proc = undefined;
      if (p !== undefined) await p.kill();
    },
    exited: () => proc?.exited ?? Promise.resolve(),
    pid: () => proc?.pid,
  };
}

interface RunningRedis {
  readonly pid: number | undefined;
  readonly exited: Promise<void>;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

async function launch(binary: string, port: number, options: RedisServerOptions): Promise<RunningRedis> {
  const persistence = options.persistence;
  // Without persistence (or a dir of the caller's) a fresh directory per start, removed at the stop.
  const ownDir = persistence === undefined && options.dir === undefined;
  const dir = persistence?.dir ?? options.dir ?? (await mkdtemp(join(tmpdir(), "pb-redis-")));
  const storage = persistence === undefined ? ["--appendonly", "no"] : ["--appendonly", "yes", "--appendfsync", persistence.appendfsync];
  const args = [
    ...(options.configFile === undefined ? [] : [options.configFile]),
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    ...storage,
    "--dir",
    dir,
    "--daemonize",
    "no",
    "--logfile",
    "",
    ...(options.args ?? []),
  ];
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const keep = (chunk: Buffer): void => {
    log = (log + chunk.toString("utf8")).slice(-4_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let spawnError: Error | undefined;
  child.once("error", (err) => {
    spawnError = err;
  });
  // A test run that dies before afterAll must not leave servers behind.
  const killOnExit = (): void => {
    child.kill("SIGKILL");
  };
  process.once("exit", killOnExit);

  const stop = async (): Promise<void> => {
    process.removeListener("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      // redis-server shuts down on SIGTERM; with --save '' no RDB is written (an AOF is fsynced)
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }
    if (ownDir) await rm(dir, { recursive: true, force: true });
  };
  const kill = async (): Promise<void> => {
    process.removeListener("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
    if (ownDir) await rm(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (spawnError !== undefined || child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(
        `redis-server on port ${port} did not start: ${spawnError?.message ?? `exit ${child.exitCode ?? child.signalCode}`}\n${log}`,
      );
    }
    if (await answersPing(port)) return { pid: child.pid, exited, stop, kill };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server on port ${port} did not answer PING within ${START_TIMEOUT_MS} ms\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One inline PING over a raw socket: true when the server answers it (+PONG, or -NOAUTH with requirepass). */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    let answer = "";
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("error", () => done(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      answer += chunk.toString("utf8");
      // a server with requirepass answers too, refusing the unauthenticated PING
      if (answer.includes("\r\n")) done(answer.startsWith("+PONG") || answer.startsWith("-NOAUTH"));
    });
  });
}

/** The executable `name` on PATH, or undefined. */
export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
