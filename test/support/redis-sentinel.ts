/**
 * Test helper: Redis as teams run it with Sentinel, on loopback — a master, `replicas` replicas
 * of it and `sentinels` Sentinels (quorum: a majority) that fail the master over when it stops
 * answering for `downAfterMs`. Every data node keeps its own directory (and AOF, with
 * `persistence`), so a killed node restarts with what it had and the Sentinels turn it into a
 * replica of the new master. Used by the Sentinel tests and the chaos run.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { startRedisServer } from "./redis-server.js";
import type { RedisServer } from "./redis-server.js";

const run = promisify(execFile);

/** The master's name in the Sentinels. */
export const SENTINEL_MASTER_NAME = "pbmaster";

export interface RedisSentinelSet {
  readonly name: string;
  /** The data nodes (the first was the master at the start). */
  readonly servers: readonly RedisServer[];
  readonly sentinels: readonly RedisServer[];
  /** Every Sentinel's `host:port` (what REDIS_SENTINELS takes). */
  readonly sentinelAddresses: readonly string[];
  /** The data node a majority of the running Sentinels name as master now. */
  master(): Promise<RedisServer>;
  /**
   * SIGKILL the master (`killedAt`: just before the signal) and wait until the Sentinels name another data node as master and it
   * says it is one; the killed node stays down (restart it with `restart`).
   */
  killMaster(timeoutMs?: number): Promise<{ readonly killed: RedisServer; readonly promoted: RedisServer; readonly killedAt: number }>;
  /** Start a stopped data node again; resolves once it replicates from the current master. */
  restart(server: RedisServer, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisSentinelOptions {
  readonly replicas?: number;
  readonly sentinels?: number;
  /** Sentinel `down-after-milliseconds`: how long the master may be silent before a failover. Default 1000. */
  readonly downAfterMs?: number;
  /** AOF on every data node (in the helper's directories); none: no persistence. */
  readonly persistence?: { readonly appendfsync: "always" | "everysec" };
  /** `requirepass` of the data nodes (`password`, also their `masterauth`) and of the Sentinels (`sentinelPassword`). */
  readonly auth?: { readonly password: string; readonly sentinelPassword: string };
}

async function cli(port: number, password: string | undefined, ...args: string[]): Promise<string> {
  const auth = password === undefined ? [] : ["--no-auth-warning", "-a", password];
  const { stdout } = await run("redis-cli", ["-p", String(port), ...auth, ...args], { timeout: 10_000 });
  return stdout.trim();
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Start the set; rejects with the reason when it is not healthy within 30 s. */
export async function startRedisSentinel(options: RedisSentinelOptions = {}): Promise<RedisSentinelSet> {
  const replicas = options.replicas ?? 1;
  const sentinelCount = options.sentinels ?? 3;
  const downAfter = options.downAfterMs ?? 1_000;
  const dataPass = options.auth?.password;
  const sentinelPass = options.auth?.sentinelPassword;
  const root = await mkdtemp(join(tmpdir(), "pb-sentinel-"));
  const servers: RedisServer[] = [];
  const sentinels: RedisServer[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all([...sentinels, ...servers].map((s) => s.stop()));
    await rm(root, { recursive: true, force: true });
  };
  const dataNode = async (i: number, replicaOf: number | undefined): Promise<RedisServer> => {
    const dir = await mkdtemp(join(root, `data${i}-`));
    const follow = replicaOf === undefined ? [] : ["--replicaof", "127.0.0.1", String(replicaOf)];
    return startRedisServer({
      ...(options.persistence === undefined ? { dir } : { persistence: { dir, appendfsync: options.persistence.appendfsync } }),
      // a node restarted by the helper may come back as a replica of another master: let it
      args: [
        ...follow,
        "--replica-announce-ip",
        "127.0.0.1",
        ...(dataPass === undefined ? [] : ["--requirepass", dataPass, "--masterauth", dataPass]),
      ],
    });
  };
  try {
    const master = await dataNode(0, undefined);
    servers.push(master);
    for (let i = 1; i <= replicas; i++) servers.push(await dataNode(i, master.port));
    const quorum = Math.floor(sentinelCount / 2) + 1;
    for (let i = 0; i < sentinelCount; i++) {
      const dir = await mkdtemp(join(root, `sentinel${i}-`));
      const conf = join(dir, "sentinel.conf");
      await writeFile(
        conf,
        [
          `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${master.port} ${quorum}`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${downAfter}`,
          `sentinel failover-timeout ${SENTINEL_MASTER_NAME} ${Math.max(2_000, 4 * downAfter)}`,
          `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
          "sentinel announce-ip 127.0.0.1",
          ...(dataPass === undefined ? [] : [`sentinel auth-pass ${SENTINEL_MASTER_NAME} ${dataPass}`]),
          ...(sentinelPass === undefined ? [] : [`requirepass ${sentinelPass}`, `sentinel sentinel-pass ${sentinelPass}`]),
          "",
        ].join("\n"),
      );
      sentinels.push(await startRedisServer({ dir, configFile: conf, args: ["--sentinel"] }));
    }
  } catch (err) {
    await stopAll();
    throw new Error(`the Sentinel set did not start: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }

  const masterPort = async (): Promise<number | undefined> => {
    const votes = new Map<number, number>();
    for (const s of sentinels) {
      if (s.pid() === undefined) continue;
      const reply = await cli(s.port, sentinelPass, "SENTINEL", "get-master-addr-by-name", SENTINEL_MASTER_NAME).catch(() => "");
      const port = Number(reply.split("\n")[1]);
      if (Number.isInteger(port) && port > 0) votes.set(port, (votes.get(port) ?? 0) + 1);
    }
    for (const [port, n] of votes) if (n > sentinelCount / 2) return port;
    return undefined;
  };
  const role = (port: number): Promise<string> => cli(port, dataPass, "ROLE").catch(() => "");
  const replicasSynced = async (masterAt: number): Promise<boolean> => {
    for (const s of servers) {
      if (s.pid() === undefined || s.port === masterAt) continue;
      const info = await cli(s.port, dataPass, "INFO", "replication").catch(() => "");
      if (!info.includes(`master_port:${masterAt}`) || !info.includes("master_link_status:up")) return false;
    }
    return true;
  };
  const waitFor = async (what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`${what} after ${timeoutMs} ms`);
      await sleep(50);
    }
  };
  const serverAt = (port: number): RedisServer => {
    const found = servers.find((s) => s.port === port);
    if (found === undefined) throw new Error(`no data node on port ${port}`);
    return found;
  };

  const set: RedisSentinelSet = {
    name: SENTINEL_MASTER_NAME,
    servers,
    sentinels,
    sentinelAddresses: sentinels.map((s) => `127.0.0.1:${s.port}`),
    async master(): Promise<RedisServer> {
      const port = await masterPort();
      if (port === undefined) throw new Error("the Sentinels agree on no master");
      return serverAt(port);
    },
    async killMaster(timeoutMs = 30_000) {
      const killed = await set.master();
      const killedAt = Date.now();
      await killed.kill();
      let promoted: RedisServer | undefined;
      await waitFor("no replica was promoted", timeoutMs, async () => {
        const port = await masterPort();
        if (port === undefined || port === killed.port) return false;
        if (!(await role(port)).startsWith("master")) return false;
        promoted = serverAt(port);
        return true;
      });
      if (promoted === undefined) throw new Error("no replica was promoted");
      return { killed, promoted, killedAt };
    },
    async restart(server: RedisServer, timeoutMs = 30_000) {
      await server.restart();
      // the Sentinels turn a returning old master into a replica of the new one
      await waitFor("the restarted node does not replicate from the master", timeoutMs, async () => {
        const port = await masterPort();
        return port !== undefined && port !== server.port && (await replicasSynced(port));
      });
    },
    stop: stopAll,
  };
  await waitFor("the Sentinels do not see the replicas in sync", 30_000, async () => {
    const port = await masterPort();
    if (port === undefined || !(await replicasSynced(port))) return false;
    // every Sentinel knows every replica and the other Sentinels (a failover needs them)
    for (const s of sentinels) {
      const info = await cli(s.port, sentinelPass, "SENTINEL", "master", SENTINEL_MASTER_NAME).catch(() => "");
      const lines = info.split("\n");
      const fieldOf = (k: string): number => Number(lines[lines.indexOf(k) + 1]);
      if (fieldOf("num-slaves") < replicas || fieldOf("num-other-sentinels") < sentinelCount - 1) return false;
    }
    return true;
  });
  return set;
}
