/**
 * Internal to the in-memory engine: a capped, ordered log (the pool's events, the audit trail)
 * that readers can wait on — the mirror of a capped Redis stream read with XREAD BLOCK.
 */
export interface Logged {
  readonly id: string;
  readonly at: number;
}

/** The ids are `<at>-<seq>`, as Redis stream ids: ordered by time, then by arrival. */
export class EventLog<T extends Logged> {
  private entries: T[] = [];
  private seq = 0;
  private waiters: Array<() => void> = [];

  constructor(private readonly max: number) {}

  /** Append what `make` builds with the new entry's id, `<at>-<seq>`. */
  append(at: number, make: (id: string) => T): void {
    this.entries.push(make(`${Math.floor(at)}-${++this.seq}`));
    if (this.entries.length > this.max) this.entries = this.entries.slice(-this.max);
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  /** Entries after `after` ("" = from the oldest kept, "$" = none of those kept now), at most `count`. */
  after(after: string, count: number): T[] {
    if (after === "$") return [];
    const i = after === "" ? 0 : this.entries.findIndex((e) => seqOf(e.id) > seqOf(after));
    return i < 0 ? [] : this.entries.slice(i, i + count);
  }

  /** The last id now ("0-0" when empty): what "$" stands for. */
  get lastId(): string {
    return this.entries.at(-1)?.id ?? "0-0";
  }

  /** The newest `limit`, newest first. */
  newest(limit: number): T[] {
    return this.entries.slice(-limit).reverse();
  }

  /** Resolves at the next append, or after `ms`. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }
}

function seqOf(id: string): number {
  return Number(id.slice(id.indexOf("-") + 1));
}
