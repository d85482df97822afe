import type { HealthResult, ProxyView } from "@proxybroker/sdk/model";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import type { ProbeOptions } from "./probe.js";

/** How and what the health checker checks. */
export interface HealthCheckerOptions {
  readonly store: LeaseStore;
  readonly pools: readonly string[];
  readonly targetUrl: string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly concurrency: number;
  /** The probe (injected in tests); `probeProxy` in production. */
  readonly probe: (opts: ProbeOptions) => Promise<HealthResult>;
  readonly onError?: (err: unknown) => void;
}

/** What one round did, per result. */
export type RoundSummary = Readonly<Record<HealthResult, number>> & { readonly skipped: number };

/**
 * The health checker (SPEC §2): every `intervalMs`, GET a check URL through every http(s) proxy
 * of the pools that is ACTIVE or QUARANTINED, and record the result in the store (a pass ends a
 * quarantine early). Blacklisted proxies wait for an admin; socks5 proxies are not checked. Run
 * it on one broker replica only (HEALTH_CHECK_URL): two checkers would count every result twice.
 */
export class HealthChecker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<RoundSummary> | undefined;

  constructor(private readonly opts: HealthCheckerOptions) {}

  /** Check every proxy once now. Rounds never overlap: a call during a round joins it. */
  runOnce(): Promise<RoundSummary> {
    this.running ??= this.round().finally(() => (this.running = undefined));
    return this.running;
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => {
      this.runOnce().catch((err: unknown) => this.opts.onError?.(err));
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async round(): Promise<RoundSummary> {
    const counts = { pass: 0, fail: 0, error: 0, skipped: 0 };
    for (const pool of this.opts.pools) {
      const todo: ProxyView[] = [];
      for (let after = ""; ; ) {
        const page = await this.opts.store.listProxies(pool, { size: 500, after });
        for (const p of page.proxies) {
          const checkable = (p.state === "ACTIVE" || p.state === "QUARANTINED") && /^https?:/.test(p.url);
          if (checkable) todo.push(p);
          else counts.skipped++;
        }
        if (page.next === "") break;
        after = page.next;
      }
      const worker = async () => {
        for (let p = todo.pop(); p !== undefined; p = todo.pop()) {
          const result = await this.opts.probe({ proxyUrl: p.url, targetUrl: this.opts.targetUrl, timeoutMs: this.opts.timeoutMs });
          await this.opts.store.recordHealth(pool, p.id, result);
          counts[result]++;
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, this.opts.concurrency) }, worker));
    }
    return counts;
  }
}
