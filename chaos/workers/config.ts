/**
 * A chaos worker's configuration: JSON in argv[2], written by the harness (chaos/fleet.ts).
 */
import type { WorkerKind } from "../records.js";

/** One target site. */
export interface SiteTarget {
  /** `http://127.0.1.x:port` */
  readonly origin: string;
}

export interface WorkerConfig {
  readonly workerId: string;
  readonly kind: WorkerKind;
  /** Which process of this worker slot (0, then 1 after the first SIGKILL and restart, …). */
  readonly gen: number;
  /**
   * Broker replicas, `127.0.0.1:port`. The SDK worker talks to the first (the SDK takes one
   * address); the stub worker starts with the first and turns to the next when one cannot serve.
   */
  readonly brokers: readonly string[];
  readonly sites: readonly SiteTarget[];
  /** The JSON-lines lease log this process appends to. */
  readonly logFile: string;
  /** Seed of this process's choices (sites, pages, streams, API). */
  readonly seed: number;
  /** Epoch ms: start no lease after this; the process exits once its loops are done. */
  readonly endAt: number;
  /** Lease loops run at once in this process. */
  readonly concurrency: number;
  /** The lease TTL asked for, ms. */
  readonly ttlMs: number;
  /** How long an acquire may wait inside the broker, ms. */
  readonly maxWaitMs: number;
  /** Pages fetched one after the other per lease: uniform in [min, max]. */
  readonly pagesPerLease: readonly [number, number];
  /** Share of leases that instead stream one long body (`/stream`), outliving the TTL. */
  readonly streamShare: number;
  /** Length of such a stream, ms. */
  readonly streamMs: number;
  /** Give up a request through the proxy after this long, ms. */
  readonly requestTimeoutMs: number;
  /** SDK workers: the client's local fallback pool on (as shipped) or off. */
  readonly sdkFallback: boolean;
  /**
   * SDK workers: `all` gives the client every replica in one gRPC target
   * (`ipv4:a,b`, its own replica first); `one` only the first replica's `host:port`.
   */
  readonly sdkAddress: "all" | "one";
  /** Gateway workers: the run's `proxybroker gateway`, `127.0.0.1:port`. */
  readonly gateway?: string;
}

export function readConfig(): WorkerConfig {
  const raw = process.argv[2];
  if (raw === undefined) throw new Error("chaos worker: configuration JSON expected as the first argument");
  return JSON.parse(raw) as WorkerConfig;
}
