import { isAbsolute } from "node:path";
import type { ScoringConfig } from "@proxybroker/sdk/model";
import { BROKER_DEFAULTS, DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { LOG_LEVELS, logLevel } from "./log-level.js";
import { anySharded, parseShardCounts, type ShardCounts } from "./shard-counts.js";

/**
 * Every setting of the broker: one environment variable each, its default beside it. Loaded once
 * at start by `loadSettings`; an invalid value refuses to start with a message naming the
 * variable.
 */
export interface Settings {
  /** LISTEN_ADDRESS — host:port of the gRPC server. */
  readonly listenAddress: string;
  /** ADMIN_LISTEN_ADDRESS — serve ProxyAdmin on this host:port only (not on LISTEN_ADDRESS); "" = same port. */
  readonly adminListenAddress: string;
  /** AUTH_TOKENS_FILE — bearer tokens, `<token> <role> [<name>]` per line; "" = no authentication. */
  readonly authTokensFile: string;
  /** TLS_CERT_FILE / TLS_KEY_FILE — serve TLS; TLS_CLIENT_CA_FILE — also require client certificates. */
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
  readonly tlsClientCaFile: string;
  /** REDIS_URL — unset (and no REDIS_CLUSTER_NODES): the embedded in-process store. */
  readonly redisUrl: string;
  /** REDIS_CLUSTER_NODES — `host:port,…` of a Redis Cluster (instead of REDIS_URL). */
  readonly redisClusterNodes: readonly string[];
  /** REDIS_SENTINELS — `host:port,…` of the Sentinels that watch the master (instead of REDIS_URL). */
  readonly redisSentinels: readonly string[];
  /** REDIS_SENTINEL_NAME — the master's name in the Sentinels (required with REDIS_SENTINELS). */
  readonly redisSentinelName: string;
  /** REDIS_SENTINEL_USERNAME / REDIS_SENTINEL_PASSWORD — the Sentinels' own auth ("" = none). */
  readonly redisSentinelUsername: string;
  readonly redisSentinelPassword: string;
  /**
   * REDIS_USERNAME / REDIS_PASSWORD — auth of the data nodes found through REDIS_SENTINELS or
   * REDIS_CLUSTER_NODES ("" = none); with REDIS_URL the URL carries it.
   */
  readonly redisUsername: string;
  readonly redisPassword: string;
  /** REDIS_KEY_PREFIX — first part of every Redis key. */
  readonly redisKeyPrefix: string;
  /** REDIS_COMMAND_TIMEOUT_MS — a Redis call slower than this answers UNAVAILABLE. */
  readonly redisCommandTimeoutMs: number;
  /** REDIS_BATCH_MAX — lease operations of one pool coalesced into one script call at most (1 = none). */
  readonly redisBatchMax: number;
  /** POOL_SHARDS — shards per pool: `n` for every pool and/or `pool=n,…` (docs/sharding.md); "" = none. */
  readonly poolShards: ShardCounts;
  /** LEASE_TTL_DEFAULT_MS / LEASE_TTL_MIN_MS / LEASE_TTL_MAX_MS — G3. */
  readonly ttlDefaultMs: number;
  readonly ttlMinMs: number;
  readonly ttlMaxMs: number;
  /** MAX_WAIT_LIMIT_MS — the longest max_wait a caller may ask for. */
  readonly maxWaitLimitMs: number;
  /** WAIT_POLL_MS — how often a waiting acquire re-checks when nothing is known (other replicas). */
  readonly waitPollMs: number;
  /** KEPT_GIVE_BACK_WAIT_MS — how long an acquire without max_wait waits for kept leases of its key asked back. */
  readonly keptGiveBackWaitMs: number;
  /** SESSION_TTL_MS — sticky session binding (§3). */
  readonly sessionTtlMs: number;
  /** BAN_TTL_MS — per-domain ban after BLOCKED (§2), unless a policy sets ban_ttl. */
  readonly banTtlMs: number;
  /** WORKER_ACTIVE_WINDOW_MS — a worker is live if it acquired within this window (§4). */
  readonly workerActiveWindowMs: number;
  /**
   * WORKER_ABSENT_AFTER_MS — a worker whose last echoed pong is this old may be in fallback: its
   * claim is reserved for it (§7). Snapshots tell workers, which serve their claims only once it
   * surely was (and others' leases on it ended).
   */
  readonly workerAbsentAfterMs: number;
  /** FALLBACK_WINDOW_MS — how long after its last contact a silent worker's share stays reserved. */
  readonly fallbackWindowMs: number;
  /** PROXIES_FILE — proxies loaded at start (one per line: url [tier=..] [key=value ...]). */
  readonly proxiesFile: string;
  /** PROXIES_POOL — the pool PROXIES_FILE is loaded into. */
  readonly proxiesPool: string;
  /** SHUTDOWN_GRACE_MS — on SIGTERM, in-flight work gets this long before the server is forced down. */
  readonly shutdownGraceMs: number;
  /** KEEPALIVE_TIME_MS / KEEPALIVE_TIMEOUT_MS — server pings to notice clients that vanished. */
  readonly keepaliveTimeMs: number;
  readonly keepaliveTimeoutMs: number;
  /** METRICS_ADDRESS — host:port of the Prometheus /metrics endpoint; "" disables it. */
  readonly metricsAddress: string;
  /** HEALTH_CHECK_URL — URL fetched through each proxy by the health checker; "" = no checker. */
  readonly healthCheckUrl: string;
  /** HEALTH_CHECK_INTERVAL_MS / HEALTH_CHECK_TIMEOUT_MS / HEALTH_CHECK_CONCURRENCY. */
  readonly healthCheckIntervalMs: number;
  readonly healthCheckTimeoutMs: number;
  readonly healthCheckConcurrency: number;
  /** HEALTH_CHECK_POOLS — comma-separated pools the checker walks. */
  readonly healthCheckPools: readonly string[];
  /** HEALTH_CHECK_URLS — `pool=url,…`: a check URL per pool (beside HEALTH_CHECK_URL for HEALTH_CHECK_POOLS). */
  readonly healthCheckUrls: Readonly<Record<string, string>>;
  /**
   * GRANT_UNKNOWN_EXITS — pools (comma-separated, `*` = all) whose proxies are granted before a
   * health check showed their exit IP although they share their host with others (providers that
   * promise a distinct exit per session or port). Elsewhere such a proxy of a checked pool waits
   * for its first probe (G9).
   */
  readonly grantUnknownExits: readonly string[];
  /** HEALTH_LEADER_TTL_MS — the checker's leader lease: a standby takes over within this after the leader died. */
  readonly healthLeaderTtlMs: number;
  /**
   * SOURCE_HEADERS_DIR — the directory a source's headers file must be in (links resolved); unset:
   * no headers file is read.
   */
  readonly sourceHeadersDir: string;
  /** SOURCE_MAX_SHRINK — a source's list that lacks more than this part of the last one accepted changes nothing. */
  readonly sourceMaxShrink: number;
  /** SOURCE_FETCH_TIMEOUT_MS / SOURCE_MAX_BYTES — a source's fetch: its time and its body's size at most. */
  readonly sourceFetchTimeoutMs: number;
  readonly sourceMaxBytes: number;
  /** MAX_RETRY_AFTER_MS — a client's retry_after is cut to this (a site's Retry-After can be absurd). */
  readonly maxRetryAfterMs: number;
  /** MAX_MESSAGE_BYTES — largest request message accepted (larger: RESOURCE_EXHAUSTED from gRPC). */
  readonly maxMessageBytes: number;
  /** MAX_STREAMS_PER_CONNECTION — concurrent calls on one HTTP/2 connection. */
  readonly maxStreamsPerConnection: number;
  /** MAX_IN_FLIGHT_PER_STREAM — unanswered requests on one Lease stream; more are denied in-band. */
  readonly maxInFlightPerStream: number;
  /** MAX_WAITING_PER_DOMAIN / MAX_WAITING — acquires waiting inside this broker, per (pool, domain-key) and in all. */
  readonly maxWaitingPerDomain: number;
  readonly maxWaiting: number;
  /** REPORT_OUTCOMES_PER_MINUTE — reported outcomes applied per caller (token name, else worker id) per minute. */
  readonly reportOutcomesPerMinute: number;
  /**
   * SCORE_*, QUARANTINE_*, MAX_QUARANTINES, RATE_LIMIT_BACKOFF_*, LATENCY_EWMA_ALPHA, HEALTH_*,
   * ADAPTIVE_* — §2.
   */
  readonly scoring: ScoringConfig;
}

/** A setting that failed validation. */
export class SettingsError extends Error {
  override readonly name = "SettingsError";
}

type Env = Readonly<Record<string, string | undefined>>;

function str(env: Env, name: string, def: string): string {
  const v = env[name];
  return v === undefined || v.trim() === "" ? def : v.trim();
}

function num(env: Env, name: string, def: number, range: { min: number; max: number; integer?: boolean }): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return def;
  const v = Number(raw);
  if (!Number.isFinite(v) || (range.integer !== false && !Number.isInteger(v))) {
    throw new SettingsError(`${name}=${raw} is not ${range.integer === false ? "a number" : "an integer"}`);
  }
  if (v < range.min || v > range.max) throw new SettingsError(`${name}=${raw} is outside [${range.min}, ${range.max}]`);
  return v;
}

const MS_DAY = 86_400_000;

function hostPort(name: string, value: string, allowEmpty: boolean): string {
  if (allowEmpty && value === "") return value;
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  if (!m || Number(m[2]) > 65535) throw new SettingsError(`${name}=${value} is not host:port`);
  return value;
}

/** A comma-separated list, entries trimmed, empty ones dropped (checked by `checkRedisChoice`). */
function hostPorts(text: string): string[] {
  return text
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "");
}

/** One way to reach Redis at most, each list entry host:port, and what a choice needs with it. */
function checkRedisChoice(s: Settings): void {
  const chosen = [
    s.redisUrl !== "" ? "REDIS_URL" : "",
    s.redisClusterNodes.length > 0 ? "REDIS_CLUSTER_NODES" : "",
    s.redisSentinels.length > 0 ? "REDIS_SENTINELS" : "",
  ].filter((n) => n !== "");
  if (chosen.length > 1) throw new SettingsError(`${chosen.join(" and ")} go apart: set one of them`);
  if (anySharded(s.poolShards) && chosen.length === 0) {
    throw new SettingsError("POOL_SHARDS needs REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES (the embedded store is one process)");
  }
  for (const [name, list] of [
    ["REDIS_CLUSTER_NODES", s.redisClusterNodes],
    ["REDIS_SENTINELS", s.redisSentinels],
  ] as const) {
    for (const node of list) {
      const m = /^(.+):(\d{1,5})$/.exec(node);
      if (m === null || Number(m[2]) > 65535) throw new SettingsError(`${name} has "${node}", which is not host:port`);
    }
  }
  const sentinel = s.redisSentinels.length > 0;
  if (sentinel && s.redisSentinelName === "") throw new SettingsError("REDIS_SENTINELS needs REDIS_SENTINEL_NAME (the master's name)");
  if (!sentinel && (s.redisSentinelName !== "" || s.redisSentinelUsername !== "" || s.redisSentinelPassword !== "")) {
    throw new SettingsError("REDIS_SENTINEL_NAME, REDIS_SENTINEL_USERNAME and REDIS_SENTINEL_PASSWORD need REDIS_SENTINELS");
  }
  if (s.redisUrl !== "" && (s.redisUsername !== "" || s.redisPassword !== "")) {
    throw new SettingsError("REDIS_USERNAME and REDIS_PASSWORD are for REDIS_SENTINELS and REDIS_CLUSTER_NODES: put them in REDIS_URL");
  }
  if (s.redisUsername !== "" && s.redisPassword === "") throw new SettingsError("REDIS_USERNAME needs REDIS_PASSWORD");
  if (s.redisSentinelUsername !== "" && s.redisSentinelPassword === "") {
    throw new SettingsError("REDIS_SENTINEL_USERNAME needs REDIS_SENTINEL_PASSWORD");
  }
}

function loadScoring(env: Env): ScoringConfig {
  const d = DEFAULT_SCORING;
  const score = (name: string, def: number) => num(env, name, def, { min: -100, max: 100, integer: false });
  return {
    initialScore: num(env, "SCORE_INITIAL", d.initialScore, { min: 0, max: 100, integer: false }),
    minScore: d.minScore,
    maxScore: d.maxScore,
    delta: {
      SUCCESS: score("SCORE_SUCCESS", d.delta.SUCCESS),
      RATE_LIMITED: score("SCORE_RATE_LIMITED", d.delta.RATE_LIMITED),
      BLOCKED: score("SCORE_BLOCKED", d.delta.BLOCKED),
      PROXY_ERROR: score("SCORE_PROXY_ERROR", d.delta.PROXY_ERROR),
      TARGET_ERROR: score("SCORE_TARGET_ERROR", d.delta.TARGET_ERROR),
      ABANDONED: score("SCORE_ABANDONED", d.delta.ABANDONED),
    },
    floor: num(env, "SCORE_FLOOR", d.floor, { min: 0, max: 100, integer: false }),
    quarantineBaseMs: num(env, "QUARANTINE_TTL_MS", d.quarantineBaseMs, { min: 1, max: MS_DAY * 7 }),
    quarantineMaxMs: num(env, "QUARANTINE_MAX_MS", d.quarantineMaxMs, { min: 1, max: MS_DAY * 30 }),
    quarantineJitter: num(env, "QUARANTINE_JITTER", d.quarantineJitter, { min: 0, max: 0.5, integer: false }),
    maxQuarantines: num(env, "MAX_QUARANTINES", d.maxQuarantines, { min: 0, max: 1000 }),
    scoreAfterQuarantine: num(env, "SCORE_AFTER_QUARANTINE", d.scoreAfterQuarantine, { min: 0, max: 100, integer: false }),
    rateLimitBackoffBaseMs: num(env, "RATE_LIMIT_BACKOFF_BASE_MS", d.rateLimitBackoffBaseMs, { min: 1, max: MS_DAY }),
    rateLimitBackoffMaxMs: num(env, "RATE_LIMIT_BACKOFF_MAX_MS", d.rateLimitBackoffMaxMs, { min: 1, max: MS_DAY }),
    ewmaAlpha: num(env, "LATENCY_EWMA_ALPHA", d.ewmaAlpha, { min: 0.001, max: 1, integer: false }),
    healthPass: score("HEALTH_PASS_SCORE", d.healthPass),
    healthFail: score("HEALTH_FAIL_SCORE", d.healthFail),
    healthErrorFactor: num(env, "HEALTH_ERROR_FACTOR", d.healthErrorFactor, { min: 0, max: 1, integer: false }),
    adaptive: {
      startMs: num(env, "ADAPTIVE_START_MS", d.adaptive.startMs, { min: 1, max: MS_DAY }),
      increase: num(env, "ADAPTIVE_INCREASE", d.adaptive.increase, { min: 1, max: 100, integer: false }),
      decrease: num(env, "ADAPTIVE_DECREASE", d.adaptive.decrease, { min: 0, max: 0.9, integer: false }),
      margin: num(env, "ADAPTIVE_MARGIN", d.adaptive.margin, { min: 1, max: 10, integer: false }),
      memoryMs: num(env, "ADAPTIVE_MEMORY_MS", d.adaptive.memoryMs, { min: 0, max: MS_DAY * 30 }),
      maxMs: num(env, "ADAPTIVE_MAX_MS", d.adaptive.maxMs, { min: 1, max: MS_DAY }),
    },
  };
}

/** POOL_SHARDS, or a `SettingsError` naming what is wrong. */
function shardCounts(text: string): ShardCounts {
  try {
    return parseShardCounts(text);
  } catch (err: unknown) {
    throw new SettingsError(`POOL_SHARDS=${text}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Read and validate all settings; throws `SettingsError` naming the first bad variable. */
export function loadSettings(env: Env = process.env): Settings {
  const s: Settings = {
    listenAddress: hostPort("LISTEN_ADDRESS", str(env, "LISTEN_ADDRESS", "127.0.0.1:50051"), false),
    adminListenAddress: hostPort("ADMIN_LISTEN_ADDRESS", str(env, "ADMIN_LISTEN_ADDRESS", ""), true),
    authTokensFile: str(env, "AUTH_TOKENS_FILE", ""),
    tlsCertFile: str(env, "TLS_CERT_FILE", ""),
    tlsKeyFile: str(env, "TLS_KEY_FILE", ""),
    tlsClientCaFile: str(env, "TLS_CLIENT_CA_FILE", ""),
    redisUrl: str(env, "REDIS_URL", ""),
    redisClusterNodes: hostPorts(str(env, "REDIS_CLUSTER_NODES", "")),
    redisSentinels: hostPorts(str(env, "REDIS_SENTINELS", "")),
    redisSentinelName: str(env, "REDIS_SENTINEL_NAME", ""),
    redisSentinelUsername: str(env, "REDIS_SENTINEL_USERNAME", ""),
    redisSentinelPassword: str(env, "REDIS_SENTINEL_PASSWORD", ""),
    redisUsername: str(env, "REDIS_USERNAME", ""),
    redisPassword: str(env, "REDIS_PASSWORD", ""),
    redisKeyPrefix: str(env, "REDIS_KEY_PREFIX", "pb"),
    redisCommandTimeoutMs: num(env, "REDIS_COMMAND_TIMEOUT_MS", 1000, { min: 10, max: 60_000 }),
    redisBatchMax: num(env, "REDIS_BATCH_MAX", 32, { min: 1, max: 256 }),
    poolShards: shardCounts(str(env, "POOL_SHARDS", "")),
    ttlDefaultMs: num(env, "LEASE_TTL_DEFAULT_MS", 30_000, { min: 1, max: MS_DAY }),
    ttlMinMs: num(env, "LEASE_TTL_MIN_MS", 1_000, { min: 1, max: MS_DAY }),
    ttlMaxMs: num(env, "LEASE_TTL_MAX_MS", 3_600_000, { min: 1, max: MS_DAY }),
    maxWaitLimitMs: num(env, "MAX_WAIT_LIMIT_MS", 300_000, { min: 0, max: MS_DAY }),
    waitPollMs: num(env, "WAIT_POLL_MS", 250, { min: 5, max: 60_000 }),
    keptGiveBackWaitMs: num(env, "KEPT_GIVE_BACK_WAIT_MS", 200, { min: 0, max: 5_000 }),
    sessionTtlMs: num(env, "SESSION_TTL_MS", 600_000, { min: 1, max: MS_DAY * 30 }),
    banTtlMs: num(env, "BAN_TTL_MS", 3_600_000, { min: 1, max: MS_DAY * 30 }),
    workerActiveWindowMs: num(env, "WORKER_ACTIVE_WINDOW_MS", 60_000, { min: 1, max: MS_DAY }),
    workerAbsentAfterMs: num(env, "WORKER_ABSENT_AFTER_MS", BROKER_DEFAULTS.workerAbsentAfterMs, { min: 1_000, max: MS_DAY }),
    fallbackWindowMs: num(env, "FALLBACK_WINDOW_MS", 600_000, { min: 1_000, max: MS_DAY }),
    proxiesFile: str(env, "PROXIES_FILE", ""),
    proxiesPool: str(env, "PROXIES_POOL", "default"),
    shutdownGraceMs: num(env, "SHUTDOWN_GRACE_MS", 10_000, { min: 0, max: 600_000 }),
    keepaliveTimeMs: num(env, "KEEPALIVE_TIME_MS", 30_000, { min: 1_000, max: MS_DAY }),
    keepaliveTimeoutMs: num(env, "KEEPALIVE_TIMEOUT_MS", 10_000, { min: 100, max: MS_DAY }),
    metricsAddress: hostPort("METRICS_ADDRESS", str(env, "METRICS_ADDRESS", ""), true),
    healthCheckUrl: str(env, "HEALTH_CHECK_URL", ""),
    healthCheckIntervalMs: num(env, "HEALTH_CHECK_INTERVAL_MS", 300_000, { min: 1_000, max: MS_DAY }),
    healthCheckTimeoutMs: num(env, "HEALTH_CHECK_TIMEOUT_MS", 10_000, { min: 100, max: 120_000 }),
    healthCheckConcurrency: num(env, "HEALTH_CHECK_CONCURRENCY", 16, { min: 1, max: 1_000 }),
    healthCheckPools: str(env, "HEALTH_CHECK_POOLS", "default")
      .split(",")
      .map((p) => p.trim()),
    healthCheckUrls: poolUrls(str(env, "HEALTH_CHECK_URLS", "")),
    grantUnknownExits: str(env, "GRANT_UNKNOWN_EXITS", "")
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== ""),
    healthLeaderTtlMs: num(env, "HEALTH_LEADER_TTL_MS", 10_000, { min: 300, max: 600_000 }),
    sourceHeadersDir: str(env, "SOURCE_HEADERS_DIR", ""),
    sourceMaxShrink: num(env, "SOURCE_MAX_SHRINK", 0.5, { min: 0, max: 1, integer: false }),
    sourceFetchTimeoutMs: num(env, "SOURCE_FETCH_TIMEOUT_MS", 30_000, { min: 100, max: 600_000 }),
    sourceMaxBytes: num(env, "SOURCE_MAX_BYTES", 16 * 1024 * 1024, { min: 1024, max: 1024 * 1024 * 1024 }),
    maxRetryAfterMs: num(env, "MAX_RETRY_AFTER_MS", MS_DAY, { min: 1, max: MS_DAY * 30 }),
    maxMessageBytes: num(env, "MAX_MESSAGE_BYTES", 4 * 1024 * 1024, { min: 1024, max: 256 * 1024 * 1024 }),
    maxStreamsPerConnection: num(env, "MAX_STREAMS_PER_CONNECTION", 100, { min: 1, max: 100_000 }),
    maxInFlightPerStream: num(env, "MAX_IN_FLIGHT_PER_STREAM", 1_000, { min: 1, max: 1_000_000 }),
    maxWaitingPerDomain: num(env, "MAX_WAITING_PER_DOMAIN", 10_000, { min: 1, max: 1_000_000 }),
    maxWaiting: num(env, "MAX_WAITING", 50_000, { min: 1, max: 10_000_000 }),
    reportOutcomesPerMinute: num(env, "REPORT_OUTCOMES_PER_MINUTE", 20_000, { min: 1, max: 10_000_000 }),
    scoring: loadScoring(env),
  };
  // LOG_LEVEL is read by the logger (src/observe/log.ts), which starts before the settings; checked here
  if (logLevel(env).bad !== undefined) {
    throw new SettingsError(`LOG_LEVEL=${str(env, "LOG_LEVEL", "")} is not one of ${LOG_LEVELS.join(", ")}`);
  }
  if (!(s.ttlMinMs <= s.ttlDefaultMs && s.ttlDefaultMs <= s.ttlMaxMs)) {
    throw new SettingsError(
      `need LEASE_TTL_MIN_MS ≤ LEASE_TTL_DEFAULT_MS ≤ LEASE_TTL_MAX_MS, got ${s.ttlMinMs}, ${s.ttlDefaultMs}, ${s.ttlMaxMs}`,
    );
  }
  if (s.scoring.quarantineBaseMs > s.scoring.quarantineMaxMs) {
    throw new SettingsError("QUARANTINE_TTL_MS must not exceed QUARANTINE_MAX_MS");
  }
  checkRedisChoice(s);
  if (s.redisUrl !== "" && !/^rediss?:\/\//.test(s.redisUrl)) {
    // the value is not quoted: a URL with a typo in its scheme may still carry a password
    throw new SettingsError("REDIS_URL must start with redis:// or rediss://");
  }
  if (s.healthCheckUrl !== "" && !/^https?:\/\/[^\s]+$/.test(s.healthCheckUrl)) {
    throw new SettingsError(`HEALTH_CHECK_URL=${s.healthCheckUrl} must be an http:// or https:// URL`);
  }
  for (const pool of s.healthCheckPools) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(pool)) throw new SettingsError(`HEALTH_CHECK_POOLS has "${pool}", which is not a pool name`);
  }
  if (s.sourceHeadersDir !== "" && !isAbsolute(s.sourceHeadersDir)) {
    throw new SettingsError(`SOURCE_HEADERS_DIR=${s.sourceHeadersDir} must be an absolute path`);
  }
  for (const pool of s.grantUnknownExits) {
    if (pool !== "*" && !/^[A-Za-z0-9_-]{1,64}$/.test(pool))
      throw new SettingsError(`GRANT_UNKNOWN_EXITS has "${pool}", which is not a pool name or *`);
  }
  if ((s.tlsCertFile === "") !== (s.tlsKeyFile === ""))
    throw new SettingsError("TLS_CERT_FILE and TLS_KEY_FILE go together: set both or neither");
  if (s.tlsClientCaFile !== "" && s.tlsCertFile === "") {
    throw new SettingsError("TLS_CLIENT_CA_FILE (client certificates) needs TLS_CERT_FILE and TLS_KEY_FILE");
  }
  if (s.adminListenAddress !== "" && s.adminListenAddress === s.listenAddress) {
    throw new SettingsError("ADMIN_LISTEN_ADDRESS must differ from LISTEN_ADDRESS (unset it to serve both on one port)");
  }
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(s.proxiesPool)) throw new SettingsError(`PROXIES_POOL=${s.proxiesPool} is not a pool name`);
  return s;
}

/** HEALTH_CHECK_URLS: `pool=url,pool=url`. */
function poolUrls(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of text
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "")) {
    const eq = entry.indexOf("=");
    const pool = entry.slice(0, eq);
    const url = entry.slice(eq + 1);
    if (eq <= 0 || !/^[A-Za-z0-9_-]{1,64}$/.test(pool) || !/^https?:\/\/[^\s]+$/.test(url)) {
      throw new SettingsError(`HEALTH_CHECK_URLS has "${entry}", which is not pool=http(s)://…`);
    }
    out[pool] = url;
  }
  return out;
}

/** The pools the health checker checks, each with its URL. */
export function healthTargets(s: Pick<Settings, "healthCheckUrl" | "healthCheckPools" | "healthCheckUrls">): Map<string, string> {
  const out = new Map<string, string>();
  if (s.healthCheckUrl !== "") for (const pool of s.healthCheckPools) out.set(pool, s.healthCheckUrl);
  for (const [pool, url] of Object.entries(s.healthCheckUrls)) out.set(pool, url);
  return out;
}

/**
 * The pools whose proxies that share their host wait for their first probe before a grant (G9):
 * the pools a health checker probes, except those GRANT_UNKNOWN_EXITS names.
 */
export function probeFirstPools(
  s: Pick<Settings, "healthCheckUrl" | "healthCheckPools" | "healthCheckUrls" | "grantUnknownExits">,
): ReadonlySet<string> {
  if (s.grantUnknownExits.includes("*")) return new Set();
  return new Set([...healthTargets(s).keys()].filter((pool) => !s.grantUnknownExits.includes(pool)));
}
