/**
 * Test helper: a real Redis Cluster on loopback — `masters` redis-server nodes in cluster mode,
 * each with `replicas` replicas, joined by `redis-cli --cluster create`, ready when every node
 * says `cluster_state:ok` and every replica is in sync. Each node keeps its own directory
 * (nodes.conf), so a killed node restarts into the cluster as it was. Used by the cluster tests
 * and the benchmark.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { startRedisServer } from "./redis-server.js";
import type { RedisServer } from "./redis-server.js";

const run = promisify(execFile);

export interface ClusterNode {
  readonly server: RedisServer;
  /** `127.0.0.1:<port>` */
  readonly address: string;
}

export interface RedisCluster {
  readonly nodes: readonly ClusterNode[];
  /** Every node's `host:port` (what REDIS_CLUSTER_NODES takes). */
  readonly addresses: readonly string[];
  /** The node that serves `key`'s slot now (asked of the cluster). */
  masterOf(key: string): Promise<ClusterNode>;
  /** Wait until every running node says cluster_state:ok and every slot has a master that answers. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** FLUSHALL on every master. */
  flushAll(): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  readonly masters?: number;
  readonly replicas?: number;
  /** cluster-node-timeout (ms): how soon a dead master is failed over. Default 1000. */
  readonly nodeTimeoutMs?: number;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run("redis-cli", ["-p", String(port), ...args], { timeout: 30_000 });
  return stdout;
}

/** Start a cluster; rejects with the reason when it does not come up within 30 s. */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicas ?? 1;
  const nodeTimeout = options.nodeTimeoutMs ?? 1_000;
  const root = await mkdtemp(join(tmpdir(), "pb-cluster-"));
  const nodes: ClusterNode[] = [];
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const dir = await mkdtemp(join(root, `node${i}-`));
      const server = await startRedisServer({
        dir,
        args: ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", String(nodeTimeout)],
      });
      nodes.push({ server, address: `127.0.0.1:${server.port}` });
    }
    await run(
      "redis-cli",
      ["--cluster", "create", ...nodes.map((n) => n.address), "--cluster-replicas", String(replicas), "--cluster-yes"],
      { timeout: 60_000 },
    );
  } catch (err) {
    await Promise.all(nodes.map((n) => n.server.stop()));
    await rm(root, { recursive: true, force: true });
    throw new Error(`the Redis Cluster did not start: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const cluster: RedisCluster = {
    nodes,
    addresses: nodes.map((n) => n.address),
    async masterOf(key: string): Promise<ClusterNode> {
      for (const n of nodes) {
        if (n.server.pid() === undefined) continue;
        const slot = Number((await cli(n.server.port, "CLUSTER", "KEYSLOT", key)).trim());
        const shards = await cli(n.server.port, "CLUSTER", "SLOTS");
        const port = masterPortOf(shards, slot);
        const found = nodes.find((m) => m.server.port === port);
        if (found !== undefined) return found;
      }
      throw new Error(`no master found for ${key}`);
    },
    async waitHealthy(timeoutMs = 30_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (await healthy(nodes)) return;
        if (Date.now() > deadline) throw new Error(`the Redis Cluster is not healthy after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async flushAll(): Promise<void> {
      for (const n of nodes) {
        if (n.server.pid() === undefined) continue;
        const role = await cli(n.server.port, "ROLE");
        if (role.startsWith("master")) await cli(n.server.port, "FLUSHALL");
      }
    },
    async stop(): Promise<void> {
      await Promise.all(nodes.map((n) => n.server.stop()));
      await rm(root, { recursive: true, force: true });
    },
  };
  await cluster.waitHealthy();
  return cluster;
}

/** The master port of `slot` in a CLUSTER SLOTS reply as redis-cli prints it (one value a line). */
function masterPortOf(text: string, slot: number): number | undefined {
  const lines = text.split("\n").map((l) => l.trim());
  // groups: start, end, master ip, master port, master id, [replica ip, port, id]…
  for (let i = 0; i + 3 < lines.length; i++) {
    const start = Number(lines[i]);
    const end = Number(lines[i + 1]);
    if (/^\d+$/.test(lines[i] ?? "") && /^\d+$/.test(lines[i + 1] ?? "") && lines[i + 2] === "127.0.0.1" && start <= slot && slot <= end) {
      return Number(lines[i + 3]);
    }
  }
  return undefined;
}

/** Every running node says cluster_state:ok, every replica's link to its master is up. */
async function healthy(nodes: readonly ClusterNode[]): Promise<boolean> {
  for (const n of nodes) {
    if (n.server.pid() === undefined) continue;
    const probe = new Redis(n.server.port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 500 });
    try {
      await probe.connect();
      if (!((await probe.call("CLUSTER", "INFO")) as string).includes("cluster_state:ok")) return false;
      const repl = await probe.info("replication");
      if (repl.includes("role:slave") && !repl.includes("master_link_status:up")) return false;
    } catch {
      return false;
    } finally {
      probe.disconnect();
    }
  }
  return true;
}
