/**
 * What the chaos harness records and the checker reads: the JSON lines every worker process
 * writes about its leases, and the sites' request log (crawl/sites.ts `RequestLogEntry`).
 * Fencing tokens are decimal strings: they are uint64 on the wire (µs since the epoch today,
 * beyond what a float keeps exactly tomorrow), compared as BigInt.
 */

/** Which kind of worker: the SDK client, or the raw generated stubs. */
export type WorkerKind = "sdk" | "stub" | "gateway";

/** How a worker got and gave back a lease. */
export type LeaseApi = "withLease" | "acquire" | "unary" | "proxy";

/** Where a lease came from (the SDK's `Lease.source`; stub leases always from the broker). */
export type LeaseSourceName = "broker" | "fallback";

/**
 * How a lease ended, as its worker saw it:
 * - `released`: released (the SDK: `release` returned; the stubs: `ReleaseLease` answered OK);
 * - `release-failed`: the stubs could not reach any replica to release it (it expires);
 * - `lost`: the broker said it is lost (expired, revoked, not found) or the SDK aborted its signal;
 * - `expired`: the worker's own deadline passed before a renewal was confirmed (it stopped using it);
 * - `stopped`: the worker process was stopping (end of the run) and gave it up.
 */
export type LeaseEnd = "released" | "release-failed" | "lost" | "expired" | "stopped";

/** Written when a worker receives a grant, before it uses the proxy. */
export interface GrantLine {
  readonly t: "grant";
  /** Worker id (a slot keeps its id across restarts, as a restarted pod keeps its name). */
  readonly worker: string;
  /** Which process of that slot (0, 1, … after each SIGKILL and restart). */
  readonly gen: number;
  readonly kind: WorkerKind;
  readonly api: LeaseApi;
  readonly lease: string;
  /** `host:port` of the proxy. */
  readonly proxy: string;
  /** The domain-key the lease is exclusive for. */
  readonly domain: string;
  readonly token: string;
  readonly source: LeaseSourceName;
  /** Wall clock, epoch ms, when the grant arrived. */
  readonly at: number;
}

/** Written when the worker is done with a lease (after its last request ended). */
export interface EndLine {
  readonly t: "end";
  readonly worker: string;
  readonly gen: number;
  /** The lease id of the grant line. */
  readonly lease: string;
  /**
   * The identity the lease ended under: an SDK fallback lease handed over to the broker on its
   * return goes on under a broker lease id and token (both then count as grants of the pair).
   */
  readonly finalLease: string;
  readonly finalToken: string;
  readonly finalSource: LeaseSourceName;
  /** Wall clock, epoch ms, when the worker stopped using the proxy (its last request ended). */
  readonly at: number;
  /** Wall clock, epoch ms, when the release (or giving it up) was over. */
  readonly releasedAt: number;
  readonly how: LeaseEnd;
  /** Lost reason or error text, when there is one. */
  readonly detail?: string;
  /** Requests sent through the proxy during the lease, and how many came back as a page. */
  readonly requests: number;
  readonly pages: number;
}

/** An SDK client's event (`mode`: broker/fallback, `breaker`: closed/open/halfOpen), for post-mortems. */
export interface EventLine {
  readonly t: "event";
  readonly worker: string;
  readonly gen: number;
  readonly event: "mode" | "breaker";
  readonly value: string;
  readonly at: number;
}

export type LeaseLine = GrantLine | EndLine | EventLine;

/** One lease as the checker sees it: its grant, and its end when the worker lived to write it. */
export interface LeaseRecord {
  readonly worker: string;
  readonly gen: number;
  readonly kind: WorkerKind;
  readonly api: LeaseApi;
  readonly lease: string;
  readonly proxy: string;
  readonly domain: string;
  readonly token: string;
  readonly source: LeaseSourceName;
  readonly grantedAt: number;
  /** Absent when the worker was killed while holding it. */
  readonly end?: EndLine;
}

/** A request as the site saw it (the fields of crawl/sites.ts `RequestLogEntry` the checker uses). */
export interface SiteRequest {
  /** `127.0.1.x:port` */
  readonly site: string;
  /** Client address: the proxy's outgoing 127.0.0.x address. */
  readonly ip: string;
  readonly start: number;
  readonly end: number;
  readonly answer: string;
}
