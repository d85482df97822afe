import { hostname } from "node:os";
import { DEFAULT_SILENT_AFTER_MS, MAX_SILENT_AFTER_MS } from "./fallback-rules.js";
import * as grpc from "@grpc/grpc-js";
import type { ProxySpecInput } from "../model/model.js";
import { parseProxySpec } from "../model/proxy-spec.js";
import type { ClassifierOptions } from "../classify/index.js";
import { channelCredentials, checkToken } from "./credentials.js";
import { InvalidArgumentError } from "./errors.js";
import { DEFAULT_MAX_BUFFERED_OUTCOMES } from "../fallback/outcome-buffer.js";
import { DEFAULT_POOL } from "../model/model.js";
import type { TlsOptions } from "./credentials.js";

/** Circuit breaker settings (opossum). */
export interface BreakerOptions {
  /** Deadline of one broker call, ms (acquires add their max_wait). Default 2000. */
  readonly callTimeoutMs?: number;
  /** Failure percentage in the rolling window that opens the breaker. Default 50. */
  readonly errorThresholdPercentage?: number;
  /** Calls in the window before it may open. Default 3. */
  readonly volumeThreshold?: number;
  /** How long the breaker stays open before a half-open probe, ms. Default 1000. */
  readonly resetTimeoutMs?: number;
  /** Length of the rolling window, ms. Default 10000. */
  readonly rollingCountTimeoutMs?: number;
}

/** Local fallback pool settings (SPEC §7). */
export interface FallbackOptions {
  /** Use a local pool while the broker is unreachable. Default true. */
  readonly enabled?: boolean;
  /**
   * Proxies to use when no snapshot was ever taken: URLs or `host:port`. Every worker of a fleet
   * gets its own share of them, so they need `staticWorkers` (the fleet's worker ids) or `shard`
   * (this worker's index among a known count).
   */
  readonly staticProxies?: readonly string[];
  /** The worker ids that share `staticProxies` (this worker's id is always one of them). */
  readonly staticWorkers?: readonly string[];
  /** This worker's share of `staticProxies`: shard `index` of `count` (0-based). */
  readonly shard?: { readonly index: number; readonly count: number };
  /** Keep the last pool snapshot here, so a worker started during an outage has a pool. */
  readonly snapshotFile?: string;
  /** How often the snapshot is refreshed while the broker is healthy, ms. Default 30000. */
  readonly snapshotRefreshMs?: number;
  /** How often the live workers (the rendezvous set of the shares) are refreshed, ms. Default 5000, at most 30000. */
  readonly membershipRefreshMs?: number;
  /**
   * A connection that carries no answer at all for this long — the client pings twice a second,
   * or every third of it — counts as an outage, ms (docs/spec.md §7): broker leases outside this
   * worker's claim are given up, and the fallback pool serves the claim once the broker surely
   * reserved it. In [1000, 3000]; default 3000. A broker that answers something is slow, not
   * unreachable.
   */
  readonly silentAfterMs?: number;
  /** Outcomes seen in fallback kept for replay; older ones are dropped. Default 10000. */
  readonly maxBufferedOutcomes?: number;
}

/** Options of `ProxyBrokerClient`. */
export interface ClientOptions {
  /**
   * Broker address: `host:port`, or a gRPC target naming several replicas, e.g.
   * `ipv4:10.0.0.5:50051,10.0.0.6:50051` or `dns:broker.internal:50051` (the first replica that
   * answers is used; when it goes away, the next).
   */
  readonly address: string;
  /** Pool to lease from. Default "default". */
  readonly pool?: string;
  /** Worker id. Default: `WORKER_ID`, else hostname-pid-starttime. */
  readonly workerId?: string;
  /** Bearer token for a broker started with AUTH_TOKENS_FILE (a `worker` token). */
  readonly token?: string;
  /** Connect with TLS: the CA that signed the broker's certificate, and for mTLS this worker's cert and key. */
  readonly tls?: TlsOptions;
  /** Channel credentials built by hand (instead of `tls`). Default: plaintext. */
  readonly credentials?: grpc.ChannelCredentials;
  /** Lease TTL asked for, ms; 0 = the broker's default for the domain. Default 0. */
  readonly ttlMs?: number;
  /**
   * The holders of this client's leases stop using them within a second (`YIELD_HOLD_MS`) of the
   * client losing the broker, and it says so to the broker (`yields_leases`): workers entering
   * their fallback pools then wait that second for them. For `proxybroker agent`, whose clients'
   * leases are cut to a second; a worker's own code stops at once (`lease.signal`). Default false.
   */
  readonly yieldsLeases?: boolean;
  readonly breaker?: BreakerOptions;
  readonly fallback?: FallbackOptions;
  /** Response classification rules (per domain). */
  readonly classifier?: ClassifierOptions;
  /** Clock (epoch ms), for tests. */
  readonly clock?: () => number;
  /** Monotonic clock (ms) for lease deadlines, for tests. Default `performance.now`. */
  readonly monotonic?: () => number;
}

/** Options after defaults and validation. */
export interface ResolvedOptions {
  readonly address: string;
  readonly pool: string;
  readonly workerId: string;
  readonly credentials: grpc.ChannelCredentials;
  readonly token: string | undefined;
  readonly ttlMs: number;
  readonly yieldsLeases: boolean;
  readonly breaker: Required<BreakerOptions>;
  readonly fallback: Required<Omit<FallbackOptions, "staticProxies" | "snapshotFile" | "staticWorkers" | "shard">> & {
    readonly staticProxies: readonly ProxySpecInput[];
    readonly staticWorkers: readonly string[];
    readonly shard: { readonly index: number; readonly count: number } | undefined;
    readonly snapshotFile: string;
  };
  readonly classifier: ClassifierOptions;
  readonly clock: () => number;
  readonly monotonic: () => number;
}

const STARTED = Date.now();

/** hostname-pid-starttime, or `WORKER_ID` when set. */
export function defaultWorkerId(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const fromEnv = env["WORKER_ID"];
  if (fromEnv !== undefined && fromEnv.trim() !== "") return fromEnv.trim();
  return `${hostname()}-${process.pid}-${STARTED}`;
}

function positive(name: string, v: number | undefined, def: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return def;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0 || v > max) {
    throw new InvalidArgumentError(`${name} must be a number in (0, ${max}], got ${String(v)}`);
  }
  return v;
}

function between(name: string, v: number | undefined, def: number, [min, max]: readonly [number, number]): number {
  if (v === undefined) return def;
  if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max) {
    throw new InvalidArgumentError(`${name} must be a number in [${min}, ${max}], got ${String(v)}`);
  }
  return v;
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;
const TARGET = /^(dns|ipv4|ipv6|unix):\S+$/;

/** Apply defaults and check every option; throws `InvalidArgumentError` naming the bad one. */
export function resolveOptions(o: ClientOptions): ResolvedOptions {
  if (typeof o !== "object" || o === null) throw new InvalidArgumentError("options must be an object");
  if (typeof o.address !== "string" || !(HOST_PORT.test(o.address) || TARGET.test(o.address))) {
    throw new InvalidArgumentError(
      `address must be host:port or a gRPC target (dns:, ipv4:, ipv6:, unix:), got ${JSON.stringify(o.address)}`,
    );
  }
  const pool = o.pool ?? DEFAULT_POOL;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(pool))
    throw new InvalidArgumentError(`pool must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(pool)}`);
  const workerId = o.workerId ?? defaultWorkerId();
  if (!/^[\x21-\x7e]{1,256}$/.test(workerId))
    throw new InvalidArgumentError(`workerId must be 1–256 printable characters, got ${JSON.stringify(workerId)}`);
  if (o.credentials !== undefined && !(o.credentials instanceof grpc.ChannelCredentials)) {
    throw new InvalidArgumentError("credentials must be grpc.ChannelCredentials");
  }
  if (o.credentials !== undefined && o.tls !== undefined) throw new InvalidArgumentError("give tls or credentials, not both");
  checkToken(o.token);
  const credentials = o.credentials ?? channelCredentials(o.tls);
  const ttlMs = o.ttlMs === undefined || o.ttlMs === 0 ? 0 : positive("ttlMs", o.ttlMs, 0);
  const b = o.breaker ?? {};
  const f = o.fallback ?? {};
  if (f.staticProxies !== undefined && !Array.isArray(f.staticProxies))
    throw new InvalidArgumentError("fallback.staticProxies must be an array");
  const staticProxies = (f.staticProxies ?? []).map((url, i) => {
    try {
      return parseProxySpec({ url, tier: "", labels: {} });
    } catch (err) {
      throw new InvalidArgumentError(`fallback.staticProxies[${i}]: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  });
  if (f.snapshotFile !== undefined && (typeof f.snapshotFile !== "string" || f.snapshotFile === "")) {
    throw new InvalidArgumentError("fallback.snapshotFile must be a non-empty path");
  }
  const staticWorkers = f.staticWorkers ?? [];
  if (!Array.isArray(staticWorkers) || !staticWorkers.every((w) => typeof w === "string" && w !== "")) {
    throw new InvalidArgumentError("fallback.staticWorkers must be an array of worker ids");
  }
  const shard = f.shard;
  if (
    shard !== undefined &&
    !(Number.isInteger(shard.count) && shard.count >= 1 && Number.isInteger(shard.index) && shard.index >= 0 && shard.index < shard.count)
  ) {
    throw new InvalidArgumentError(`fallback.shard must be { index, count } with 0 ≤ index < count, got ${JSON.stringify(shard)}`);
  }
  if (staticProxies.length > 0 && staticWorkers.length === 0 && shard === undefined) {
    throw new InvalidArgumentError(
      "fallback.staticProxies needs fallback.staticWorkers (the fleet's worker ids) or fallback.shard ({ index, count }): without them every worker would use every proxy",
    );
  }
  return {
    address: o.address,
    pool,
    workerId,
    credentials,
    token: o.token,
    ttlMs,
    yieldsLeases: o.yieldsLeases === true,
    breaker: {
      callTimeoutMs: positive("breaker.callTimeoutMs", b.callTimeoutMs, 2_000),
      errorThresholdPercentage: positive("breaker.errorThresholdPercentage", b.errorThresholdPercentage, 50, 100),
      volumeThreshold: positive("breaker.volumeThreshold", b.volumeThreshold, 3),
      resetTimeoutMs: positive("breaker.resetTimeoutMs", b.resetTimeoutMs, 1_000),
      rollingCountTimeoutMs: positive("breaker.rollingCountTimeoutMs", b.rollingCountTimeoutMs, 10_000),
    },
    fallback: {
      enabled: f.enabled ?? true,
      staticProxies,
      snapshotFile: f.snapshotFile ?? "",
      staticWorkers,
      shard,
      snapshotRefreshMs: positive("fallback.snapshotRefreshMs", f.snapshotRefreshMs, 30_000),
      // at most 30 s: the broker reserves domain-keys a silent worker used alone by what its lists surely showed
      membershipRefreshMs: positive("fallback.membershipRefreshMs", f.membershipRefreshMs, 5_000, 30_000),
      silentAfterMs: between("fallback.silentAfterMs", f.silentAfterMs, DEFAULT_SILENT_AFTER_MS, [1_000, MAX_SILENT_AFTER_MS]),
      maxBufferedOutcomes: positive("fallback.maxBufferedOutcomes", f.maxBufferedOutcomes, DEFAULT_MAX_BUFFERED_OUTCOMES),
    },
    classifier: o.classifier ?? {},
    clock: o.clock ?? Date.now,
    monotonic: o.monotonic ?? (() => performance.now()),
  };
}
