/**
 * Internal to the Redis store: the servers behind it as the broker watches them — an id that
 * changes with every restart or failover (the masters' `run_id`s), and whether such a change can
 * have lost writes. A server is durable when it writes every command to its append-only file
 * before it answers (`appendonly yes`, `appendfsync always`: a restart, clean or not, reloads
 * everything it acknowledged) and it did not take over from another master as a replica (which
 * may have missed the last writes). A server still loading its data is not reachable yet.
 */
import type { Redis } from "ioredis";
import { StoreUnavailableError } from "@proxybroker/sdk/engine";
import type { StoreServer } from "@proxybroker/sdk/model";
import { ScriptReplyError, toStoreError } from "./errors.js";
import { masters } from "./nodes.js";
import type { RedisClient } from "./scripts.js";

/** One `INFO` field (undefined when absent). */
function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*?)\\r?$`, "m").exec(info)?.[1];
}

/**
 * Whether the server's `appendfsync` is `always`. Only an error reply (CONFIG refused or renamed,
 * as on managed Redis) means "unknown, so not durable"; anything else (the connection not ready,
 * a timeout) rejects as unavailable, so a passing hiccup is never read as a server that may lose
 * writes.
 */
export async function fsyncAlways(node: Redis): Promise<boolean> {
  try {
    const conf: unknown = await node.call("CONFIG", "GET", "appendfsync");
    return Array.isArray(conf) && conf[1] === "always";
  } catch (err) {
    const mapped = toStoreError(err);
    if (mapped instanceof StoreUnavailableError) throw mapped;
    return false;
  }
}

/**
 * One server's id and durability; rejects while it loads its data, and while the client's ready
 * check is still waiting (ioredis lets loading-safe commands such as INFO through before it ends,
 * but not CONFIG).
 */
export async function inspect(node: Redis): Promise<StoreServer> {
  const reply: unknown = await node.call("INFO", "server", "persistence", "replication");
  const info = typeof reply === "string" ? reply : Buffer.isBuffer(reply) ? reply.toString("utf8") : "";
  const id = field(info, "run_id");
  if (id === undefined) throw new ScriptReplyError("INFO server has no run_id");
  if (field(info, "loading") === "1" || field(info, "async_loading") === "1") {
    throw new StoreUnavailableError(`Redis ${id} is still loading its data`);
  }
  // promoted from replica in this run: it has a second replication id
  const promoted = (field(info, "second_repl_offset") ?? "-1") !== "-1";
  const always = await fsyncAlways(node);
  return { id, durable: field(info, "aof_enabled") === "1" && always && !promoted };
}

/** The servers' id (every master's `run_id`, sorted) and whether all of them are durable. */
export async function serverState(client: RedisClient): Promise<StoreServer> {
  const nodes = masters(client);
  if (nodes.length === 0) throw new ScriptReplyError("the cluster client knows no master yet");
  const found = await Promise.all(nodes.map(inspect));
  return {
    id: found
      .map((s) => s.id)
      .sort()
      .join(","),
    durable: found.every((s) => s.durable),
  };
}
