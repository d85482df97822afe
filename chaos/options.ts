/**
 * The chaos harness's settings, from the environment (chaos/README.md lists them).
 */
import { join } from "node:path";
import { normalizeIsolationGroup } from "@proxybroker/sdk/model";

export const FAULT_KINDS = [
  "worker-kill",
  "broker-kill",
  "broker-term",
  "redis-restart",
  "redis-wipe",
  "redis-failover",
  "gateway-kill",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** CHAOS_REDIS: one server, a master with a replica and Sentinels, or a Redis Cluster. */
export const REDIS_TOPOLOGIES = ["single", "sentinel", "cluster"] as const;
export type RedisTopology = (typeof REDIS_TOPOLOGIES)[number];

/** The Redis faults a topology can take (chaos/redis-topology.ts): a restart needs one server, a failover a replica. */
export function redisFaults(topology: RedisTopology): readonly FaultKind[] {
  return topology === "single" ? ["redis-restart", "redis-wipe"] : ["redis-failover", "redis-wipe"];
}

export interface ChaosOptions {
  /** Seeds the fault schedule and every worker's choices. */
  readonly seed: number;
  /** Run this long (ms), unless `leases` ends it first; undefined with `leases`: no time limit. */
  readonly durationMs: number | undefined;
  /** Run until the workers were granted this many leases. */
  readonly leases: number | undefined;
  readonly sdkWorkers: number;
  readonly stubWorkers: number;
  /** Worker processes that send plain HTTP through the run's gateway (`proxybroker gateway`). */
  readonly gatewayWorkers: number;
  /** Lease loops per worker process. */
  readonly concurrency: number;
  readonly proxies: number;
  readonly sites: number;
  readonly ttlMs: number;
  readonly maxWaitMs: number;
  /** Pause before the next fault, ms, after the previous one is over: uniform in [lo, hi]. */
  readonly faultGapMs: readonly [number, number];
  /** How long a killed or stopped process (or Redis) stays down, ms: uniform in [lo, hi]. */
  readonly downMs: readonly [number, number];
  readonly faults: readonly FaultKind[];
  /** No fault in the last part of the run, ms, so everything is back before the workers stop. */
  readonly quietMs: number;
  readonly appendfsync: "always" | "everysec";
  /** CHAOS_REDIS: what the brokers run on. */
  readonly redis: RedisTopology;
  /** The SDK workers' fallback pool (on, as shipped; off to see the other faults alone). */
  readonly sdkFallback: boolean;
  /** The SDK workers' address: every replica in one gRPC target, or one replica. */
  readonly sdkAddress: "all" | "one";
  readonly pagesPerLease: readonly [number, number];
  readonly pageDelayMs: readonly [number, number];
  readonly streamShare: number;
  readonly streamMs: number;
  /**
   * CHAOS_ISOLATION: every site's domain policy names this isolation group, and one IP inside two
   * sites at once fails the run; undefined: no policy (today's run).
   */
  readonly isolation: string | undefined;
  /** POOL_SHARDS of the brokers ("" = unsharded). */
  readonly poolShards: string;
  /** Where the logs of the run go. */
  readonly dir: string;
}

function num(name: string, def: number, opts: { readonly min: number; readonly integer?: boolean } = { min: 0 }): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < opts.min || (opts.integer !== false && !Number.isInteger(n))) {
    throw new Error(`${name} must be ${opts.integer !== false ? "an integer" : "a number"} ≥ ${opts.min}, got "${raw}"`);
  }
  return n;
}

function range(name: string, def: readonly [number, number]): readonly [number, number] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return def;
  const m = /^(\d+)-(\d+)$/.exec(raw.trim());
  if (m === null || Number(m[1]) > Number(m[2])) throw new Error(`${name} must be lo-hi (integers, lo ≤ hi), got "${raw}"`);
  return [Number(m[1]), Number(m[2])];
}

function redisTopology(): RedisTopology {
  const raw = (process.env["CHAOS_REDIS"] ?? "").trim();
  if (raw === "") return "single";
  const found = REDIS_TOPOLOGIES.find((t) => t === raw);
  if (found === undefined) throw new Error(`CHAOS_REDIS must be one of ${REDIS_TOPOLOGIES.join(", ")}, got "${raw}"`);
  return found;
}

/** CHAOS_FAULTS, or every kind the topology (and a gateway, when one runs) can take. */
function faultKinds(topology: RedisTopology, gateway: boolean): readonly FaultKind[] {
  const possible = FAULT_KINDS.filter(
    (k) => (!k.startsWith("redis-") || redisFaults(topology).includes(k)) && (k !== "gateway-kill" || gateway),
  );
  const raw = process.env["CHAOS_FAULTS"];
  if (raw === undefined || raw.trim() === "") return possible;
  if (raw.trim() === "none") return [];
  const wanted = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const kinds = wanted.filter((s): s is FaultKind => (FAULT_KINDS as readonly string[]).includes(s));
  if (kinds.length !== wanted.length) throw new Error(`CHAOS_FAULTS: known faults are ${FAULT_KINDS.join(", ")}`);
  const impossible = kinds.filter((k) => !possible.includes(k));
  if (impossible.length > 0)
    throw new Error(
      `CHAOS_FAULTS: CHAOS_REDIS=${topology}${gateway ? "" : " without gateway workers"} cannot take ${impossible.join(", ")}`,
    );
  return kinds;
}

/** CHAOS_ISOLATION: unset or empty = none; otherwise a name the broker takes (checked here, before anything starts). */
function isolationGroup(): string | undefined {
  const raw = (process.env["CHAOS_ISOLATION"] ?? "").trim();
  if (raw === "") return undefined;
  try {
    return normalizeIsolationGroup(raw);
  } catch (err) {
    throw new Error(`CHAOS_ISOLATION: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function sdkAddress(): "all" | "one" {
  const raw = process.env["CHAOS_SDK_ADDRESS"] ?? "all";
  if (raw !== "all" && raw !== "one") throw new Error(`CHAOS_SDK_ADDRESS must be all or one, got "${raw}"`);
  return raw;
}

export function readOptions(): ChaosOptions {
  const seed = num("CHAOS_SEED", Math.floor(Math.random() * 2 ** 31));
  const leasesRaw = process.env["CHAOS_LEASES"];
  const leases = leasesRaw === undefined || leasesRaw.trim() === "" ? undefined : num("CHAOS_LEASES", 0, { min: 1 });
  const secondsRaw = process.env["CHAOS_SECONDS"];
  const seconds =
    secondsRaw === undefined || secondsRaw.trim() === ""
      ? leases === undefined
        ? 300
        : undefined
      : num("CHAOS_SECONDS", 300, { min: 10 });
  const ttlMs = num("CHAOS_TTL_MS", 2_000, { min: 500 });
  const appendfsync = process.env["CHAOS_APPENDFSYNC"] ?? "everysec";
  if (appendfsync !== "always" && appendfsync !== "everysec")
    throw new Error(`CHAOS_APPENDFSYNC must be always or everysec, got "${appendfsync}"`);
  const sites = num("CHAOS_SITES", 3, { min: 1 });
  const isolation = isolationGroup();
  if (isolation !== undefined && sites < 2)
    throw new Error("CHAOS_ISOLATION needs CHAOS_SITES ≥ 2 (one site has nothing to be kept apart from)");
  const redis = redisTopology();
  const gatewayWorkers = num("CHAOS_GATEWAY_WORKERS", 1);
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return {
    seed,
    durationMs: seconds === undefined ? undefined : seconds * 1000,
    leases,
    sdkWorkers: num("CHAOS_SDK_WORKERS", 2),
    stubWorkers: num("CHAOS_STUB_WORKERS", 2),
    gatewayWorkers,
    concurrency: num("CHAOS_CONCURRENCY", 5, { min: 1 }),
    proxies: num("CHAOS_PROXIES", 8, { min: 1 }),
    sites,
    ttlMs,
    maxWaitMs: num("CHAOS_MAX_WAIT_MS", 1_000),
    faultGapMs: range("CHAOS_FAULT_GAP_MS", [2_000, 5_000]),
    downMs: range("CHAOS_DOWN_MS", [200, 2_500]),
    faults: faultKinds(redis, gatewayWorkers > 0),
    quietMs: num("CHAOS_QUIET_MS", 3 * ttlMs),
    appendfsync,
    redis,
    sdkFallback: process.env["CHAOS_SDK_FALLBACK"] !== "0",
    sdkAddress: sdkAddress(),
    pagesPerLease: range("CHAOS_PAGES", [1, 3]),
    pageDelayMs: range("CHAOS_PAGE_MS", [1, 10]),
    streamShare: num("CHAOS_STREAM_SHARE", 0.03, { min: 0, integer: false }),
    streamMs: num("CHAOS_STREAM_MS", Math.round(2.5 * ttlMs)),
    isolation,
    poolShards: process.env["CHAOS_POOL_SHARDS"] ?? "",
    dir: process.env["CHAOS_DIR"] ?? join(".tmp", "chaos", `${stamp}-seed${seed}`),
  };
}
