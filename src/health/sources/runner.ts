/**
 * Runs the sources' refreshes on the health checker's leader only: every `tickMs` it looks at the
 * sources of the pools the checker checks and refreshes each one whose interval has passed since
 * its last refresh (one at a time; a tick that finds the last still running does nothing).
 */
import type { StoreSources } from "@proxybroker/sdk/engine";
import type { SourceView } from "@proxybroker/sdk/model";
import type { RefreshOutcome, SourceRefresher } from "./refresh.js";

export interface SourceRunnerOptions {
  readonly store: StoreSources;
  readonly refresher: SourceRefresher;
  /** The pools whose sources it refreshes. */
  readonly pools: () => readonly string[];
  /** Whether this replica leads the health checker now. */
  readonly isLeader: () => boolean;
  readonly tickMs: number;
  readonly clock?: () => number;
  readonly onError?: (err: unknown) => void;
}

export class SourceRunner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly clock: () => number;

  constructor(private readonly opts: SourceRunnerOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.tick(), this.opts.tickMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One look at the sources (what the timer runs); resolves with the refreshes it made. */
  async tick(): Promise<RefreshOutcome[]> {
    if (!this.opts.isLeader() || this.running !== undefined) return [];
    const done: RefreshOutcome[] = [];
    const run = this.due().then(async (sources) => {
      for (const s of sources) {
        if (!this.opts.isLeader()) return;
        try {
          done.push(await this.opts.refresher.refresh(s));
        } catch (err) {
          // the store failed mid-way: the source is still due, tried again at the next tick
          this.opts.onError?.(err);
        }
      }
    });
    this.running = run.catch((err: unknown) => this.opts.onError?.(err)).finally(() => (this.running = undefined));
    await this.running;
    return done;
  }

  private async due(): Promise<SourceView[]> {
    const now = this.clock();
    const out: SourceView[] = [];
    for (const pool of this.opts.pools()) {
      for (const s of await this.opts.store.listSources(pool)) if (s.status.lastRefreshAt + s.intervalMs <= now) out.push(s);
    }
    return out;
  }
}
