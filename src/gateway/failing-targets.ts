/**
 * Targets that just failed through two proxies (docs/gateway.md): a GET or HEAD whose proxy
 * failed before anything came from the site, and whose retry through another proxy failed the same
 * way, is the target's failure — neither proxy is blamed (TARGET_ERROR) — and the gateway stops
 * trying that host for `forMs`, answering 502 with the reason at once rather than burning leases
 * (and proxies' scores) on it. Bounded: at most `max` hosts are remembered (the oldest go first).
 */
export class FailingTargets {
  private readonly until = new Map<string, { readonly at: number; readonly reason: string }>();

  constructor(
    private readonly opts: { readonly forMs: number; readonly max?: number; readonly clock?: () => number } = { forMs: 30_000 },
  ) {}

  private now(): number {
    return (this.opts.clock ?? Date.now)();
  }

  /** `host` failed through two proxies: `reason` says how. */
  note(host: string, reason: string): void {
    this.until.delete(host);
    this.until.set(host, { at: this.now() + this.opts.forMs, reason });
    const max = this.opts.max ?? 10_000;
    while (this.until.size > max) {
      const oldest = this.until.keys().next().value;
      if (oldest === undefined) break;
      this.until.delete(oldest);
    }
  }

  /** Why `host` is not tried now, or undefined. */
  refusal(host: string): string | undefined {
    const e = this.until.get(host);
    if (e === undefined) return undefined;
    const left = e.at - this.now();
    if (left <= 0) {
      this.until.delete(host);
      return undefined;
    }
    return `target ${host} failed through two proxies just now (${e.reason}): not tried again for ${Math.ceil(left / 1_000)} s`;
  }
}
