import type { HealthResult, ProxyView } from "@proxybroker/sdk/model";
import type { StoreProxies } from "@proxybroker/sdk/engine";
import type { CheckProgressUpdate } from "./pass.js";
import type { ProbeOptions, ProbeResult } from "./probe.js";

/** How and what the health checker checks. */
export interface HealthCheckerOptions {
  readonly store: StoreProxies;
  /** Pool → the URL its proxies are checked with (ideally one like the targets). */
  readonly targets: ReadonlyMap<string, string>;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Probes in flight at once, per pass. */
  readonly concurrency: number;
  /** The probe (injected in tests); `probeProxy` in production. */
  readonly probe: (opts: ProbeOptions) => Promise<ProbeResult>;
  readonly clock?: () => number;
  /** Told of every result (metrics). */
  readonly onResult?: (pool: string, result: HealthResult) => void;
}

/** Options of one pass. */
export interface PassOptions {
  /** The leader term the results are recorded under (0: not fenced, a manual pass). */
  readonly term?: number;
  /** Check every proxy, also those a failure backed off. Default false. */
  readonly all?: boolean;
  readonly onProgress?: (p: CheckProgressUpdate) => void;
  /** Check only these proxies (those a source just added), due or not. */
  readonly only?: ReadonlySet<string>;
  readonly signal?: AbortSignal;
}

/** A failing proxy is checked again after interval × 2^(failures − 1), at most this many intervals. */
const MAX_BACKOFF_INTERVALS = 8;

/**
 * The health checker (SPEC §2): GET the pool's check URL through every http(s) proxy that is
 * ACTIVE or QUARANTINED and record the result (+3 / −10 / × 0.7; a pass ends a quarantine early).
 * A passing answer that shows an IP records it as the proxy's exit IP (G9).
 * Blacklisted and disabled proxies wait for an admin; socks5 proxies are not checked. A proxy that
 * fails is checked less often — after 1, 2, 4 … up to 8 intervals — until it passes again. Who
 * runs the rounds is decided by a leader lease (see health-service.ts); `pass` also serves
 * ProxyAdmin.CheckProxies.
 */
export class HealthChecker {
  /** `<pool>\0<id>` → consecutive failures and when the proxy is due again. */
  private readonly backoff = new Map<string, { failures: number; dueAt: number }>();
  private readonly clock: () => number;

  constructor(private readonly opts: HealthCheckerOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  /** The pools it checks. */
  get pools(): string[] {
    return [...this.opts.targets.keys()];
  }

  /** One pass over every pool; resolves with the totals. */
  async round(opts: PassOptions = {}): Promise<CheckProgressUpdate> {
    let total = { total: 0, checked: 0, passed: 0, failed: 0, errors: 0, proxyId: "", result: "" as const };
    for (const pool of this.opts.targets.keys()) {
      if (opts.signal?.aborted === true) break;
      const p = await this.pass(pool, opts);
      total = {
        ...total,
        total: total.total + p.total,
        checked: total.checked + p.checked,
        passed: total.passed + p.passed,
        failed: total.failed + p.failed,
        errors: total.errors + p.errors,
      };
    }
    return total;
  }

  /** One pass over `pool`; resolves with its totals. Throws when the pool has no check URL. */
  async pass(pool: string, opts: PassOptions = {}): Promise<CheckProgressUpdate> {
    const targetUrl = this.opts.targets.get(pool);
    if (targetUrl === undefined) throw new RangeError(`pool ${pool} has no health check URL (HEALTH_CHECK_URL / HEALTH_CHECK_URLS)`);
    const now = this.clock();
    const todo: ProxyView[] = [];
    for (let after = ""; ; ) {
      const page = await this.opts.store.listProxies(pool, { size: 500, after });
      for (const p of page.proxies) {
        const checkable = (p.state === "ACTIVE" || p.state === "QUARANTINED") && /^https?:/.test(p.url);
        const due =
          opts.only !== undefined
            ? opts.only.has(p.id)
            : opts.all === true || (this.backoff.get(`${pool}\u0000${p.id}`)?.dueAt ?? 0) <= now;
        if (checkable && due) todo.push(p);
      }
      if (page.next === "") break;
      after = page.next;
    }
    const counts = { total: todo.length, checked: 0, passed: 0, failed: 0, errors: 0 };
    opts.onProgress?.({ ...counts, proxyId: "", result: "" });
    todo.reverse();
    const worker = async (): Promise<void> => {
      for (let p = todo.pop(); p !== undefined && opts.signal?.aborted !== true; p = todo.pop()) {
        const { result, exitIp } = await this.opts.probe({ proxyUrl: p.url, targetUrl, timeoutMs: this.opts.timeoutMs });
        await this.opts.store.recordHealth(pool, p.id, result, opts.term ?? 0, exitIp);
        this.noteResult(pool, p.id, result);
        this.opts.onResult?.(pool, result);
        counts.checked++;
        if (result === "pass") counts.passed++;
        else if (result === "fail") counts.failed++;
        else counts.errors++;
        opts.onProgress?.({ ...counts, proxyId: p.id, result });
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.opts.concurrency) }, worker));
    return { ...counts, proxyId: "", result: "" };
  }

  private noteResult(pool: string, id: string, result: HealthResult): void {
    const key = `${pool}\u0000${id}`;
    if (result === "pass") {
      this.backoff.delete(key);
      return;
    }
    const failures = (this.backoff.get(key)?.failures ?? 0) + 1;
    const wait = this.opts.intervalMs * Math.min(MAX_BACKOFF_INTERVALS, 2 ** (failures - 1));
    // the first failure is checked again at the next round (wait − a little, rounds are interval apart)
    this.backoff.set(key, { failures, dueAt: this.clock() + wait - this.opts.intervalMs / 2 });
  }
}
