/**
 * What both kinds of chaos worker share: the seeded plan of each lease (which site, which pages,
 * or one long stream), using a leased proxy for it until the plan is done or the lease's signal
 * aborts, the outcome to release with, and the lease loops with their progress lines on stdout.
 */
import { seededRandom } from "../../test/support/fake-clock.js";
import type { SiteTarget, WorkerConfig } from "./config.js";
import type { FailureCounts } from "./failures.js";
import { getThroughProxy } from "./http.js";

/** What one lease is used for. */
export interface LeasePlan {
  readonly site: SiteTarget;
  /** Fetched one after the other through the proxy. */
  readonly urls: readonly string[];
}

/** The plan of the next lease: a random site, then 1..n pages of it or (sometimes) one stream. */
export function planLease(config: WorkerConfig, random: () => number): LeasePlan {
  const site = config.sites[Math.floor(random() * config.sites.length)] ?? config.sites[0];
  if (site === undefined) throw new Error("chaos worker: no sites");
  if (random() < config.streamShare) return { site, urls: [`${site.origin}/stream?ms=${config.streamMs}`] };
  const [lo, hi] = config.pagesPerLease;
  const n = lo + Math.floor(random() * (hi - lo + 1));
  return { site, urls: Array.from({ length: n }, () => `${site.origin}/page/${1 + Math.floor(random() * 100_000)}`) };
}

/** What happened through the proxy during one lease. */
export interface LeaseUse {
  readonly requests: number;
  readonly pages: number;
  /** Every answer was a page. */
  readonly allPages: boolean;
  /** The lease's signal stopped it. */
  readonly aborted: boolean;
  /** A request failed without an answer (not because of the signal). */
  readonly error?: string;
  /** The last non-page status, if any. */
  readonly lastStatus: number;
}

/** Fetch the plan's URLs through `proxy` one after the other; stops at once when `signal` aborts. */
export async function useLease(opts: {
  readonly proxy: string;
  readonly plan: LeasePlan;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
}): Promise<LeaseUse> {
  let requests = 0;
  let pages = 0;
  let lastStatus = 200;
  for (const url of opts.plan.urls) {
    if (opts.signal.aborted) return { requests, pages, allPages: false, aborted: true, lastStatus };
    requests += 1;
    try {
      const answer = await getThroughProxy({ proxy: opts.proxy, url, signal: opts.signal, timeoutMs: opts.timeoutMs });
      if (answer.page) pages += 1;
      else lastStatus = answer.status;
    } catch (err) {
      if (opts.signal.aborted) return { requests, pages, allPages: false, aborted: true, lastStatus };
      return { requests, pages, allPages: false, aborted: false, error: err instanceof Error ? err.message : String(err), lastStatus };
    }
  }
  return { requests, pages, allPages: pages === requests, aborted: false, lastStatus };
}

/** The outcome names both workers release with (the SDK's `OutcomeKindName`, the proto's enum). */
export type OutcomeName = "SUCCESS" | "TARGET_ERROR" | "PROXY_ERROR" | "ABANDONED";

/**
 * The outcome of a lease: SUCCESS when every answer was a page; ABANDONED when the lease was lost
 * mid-way; PROXY_ERROR when a request failed without an answer; TARGET_ERROR for any other answer
 * (a 429 here only comes from an overlap, which the checker reports: reporting it RATE_LIMITED
 * would add cool-downs and adaptive pacing that blur the end-of-run checks).
 */
export function outcomeOf(use: LeaseUse): { readonly kind: OutcomeName; readonly httpStatus: number } {
  if (use.aborted) return { kind: "ABANDONED", httpStatus: 0 };
  if (use.error !== undefined) return { kind: "PROXY_ERROR", httpStatus: 0 };
  if (use.allPages) return { kind: "SUCCESS", httpStatus: 200 };
  return { kind: "TARGET_ERROR", httpStatus: use.lastStatus };
}

/** The domain-key of a site: its host without the port (the broker ignores ports). */
export function domainOf(site: SiteTarget): string {
  return new URL(site.origin).hostname;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** What a worker prints on stdout every 500 ms and at its end. */
export interface Progress {
  readonly grants: number;
  /** Failed acquires by kind. */
  readonly failures: Record<string, number>;
}

/**
 * Run `config.concurrency` loops of `oneLease` until SIGTERM or `endAt`, each with its own seeded random
 * source, printing its `Progress` as a JSON line on stdout every 500 ms (the harness counts
 * leases by it).
 */
export async function runLoops(opts: {
  readonly config: WorkerConfig;
  readonly grants: () => number;
  readonly failures: FailureCounts;
  readonly oneLease: (random: () => number) => Promise<void>;
}): Promise<void> {
  const { config } = opts;
  const report = (): void => {
    const p: Progress = { grants: opts.grants(), failures: opts.failures.toJSON() };
    process.stdout.write(`${JSON.stringify(p)}\n`);
  };
  const progress = setInterval(report, 500);
  // SIGTERM: the harness ends the run; every loop finishes (releases) its lease, then stops.
  let stopping = false;
  process.once("SIGTERM", () => {
    stopping = true;
  });
  const loop = async (i: number): Promise<void> => {
    const random = seededRandom((config.seed * 7919 + i * 104_729) >>> 0);
    while (!stopping && Date.now() < config.endAt) await opts.oneLease(random);
  };
  try {
    await Promise.all(Array.from({ length: config.concurrency }, (_, i) => loop(i)));
  } finally {
    clearInterval(progress);
    report();
  }
}

/** Start a worker process: run `main`, exit 0, or 1 with the error on stderr. */
export function runWorkerProcess(name: string, main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
