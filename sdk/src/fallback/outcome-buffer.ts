import type { OutcomeInput } from "../model/model.js";

/** How many outcomes a fallback pool keeps for replay unless told otherwise. */
export const DEFAULT_MAX_BUFFERED_OUTCOMES = 10_000;

/** One outcome a worker saw while in fallback, kept for replay to the broker. */
export interface BufferedOutcome {
  readonly pool: string;
  readonly proxyId: string;
  readonly domainKey: string;
  readonly outcome: OutcomeInput;
  /** Epoch ms of the release that reported it. */
  readonly observedAt: number;
  readonly workerId: string;
}

/**
 * A bounded FIFO of fallback outcomes. When full, the oldest entry is dropped and counted in
 * `dropped` (cumulative, never reset), so a long outage costs bounded memory and the loss is
 * visible. Backed by a ring so a push is O(1).
 */
export class OutcomeBuffer {
  private readonly ring: (BufferedOutcome | undefined)[];
  private head = 0;
  private count = 0;
  private lost = 0;

  /** `capacity` ≥ 0; with 0 every outcome is dropped. */
  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) throw new RangeError(`outcome buffer capacity ${capacity} must be an integer ≥ 0`);
    this.ring = new Array<BufferedOutcome | undefined>(capacity);
  }

  /** Entries held now. */
  get size(): number {
    return this.count;
  }

  /** Entries dropped because the buffer was full, since it was created. */
  get dropped(): number {
    return this.lost;
  }

  /** Append; when full, drop the oldest. */
  push(entry: BufferedOutcome): void {
    if (this.capacity === 0) {
      this.lost += 1;
      return;
    }
    if (this.count === this.capacity) {
      this.ring[this.head] = entry;
      this.head = (this.head + 1) % this.capacity;
      this.lost += 1;
      return;
    }
    this.ring[(this.head + this.count) % this.capacity] = entry;
    this.count += 1;
  }

  /** Take every entry, oldest first; the buffer is empty afterwards. */
  drain(): BufferedOutcome[] {
    const out: BufferedOutcome[] = [];
    for (let i = 0; i < this.count; i++) {
      const j = (this.head + i) % this.capacity;
      out.push(this.ring[j]!);
      this.ring[j] = undefined;
    }
    this.head = 0;
    this.count = 0;
    return out;
  }

  /**
   * Put back entries that a replay could not deliver (as returned by `drain`, oldest first).
   * They go before the entries buffered since; what no longer fits is dropped oldest-first.
   */
  requeue(entries: readonly BufferedOutcome[]): void {
    const newer = this.drain();
    for (const e of entries) this.push(e);
    for (const e of newer) this.push(e);
  }
}

/**
 * The outcomes of a fallback pool's leases waiting for replay to the broker: an `OutcomeBuffer`
 * of `capacity` whose drops are reported to `onDropped` (the client's `outcomesDropped` event).
 */
export class FallbackOutcomes {
  private readonly buffer: OutcomeBuffer;

  constructor(
    capacity: number,
    private readonly onDropped?: (count: number) => void,
  ) {
    this.buffer = new OutcomeBuffer(capacity);
  }

  /** Outcomes waiting for replay. */
  get size(): number {
    return this.buffer.size;
  }

  /** Outcomes dropped because the buffer was full (cumulative). */
  get dropped(): number {
    return this.buffer.dropped;
  }

  /** Keep `entry` for replay; a drop it causes is reported by the next `reportSince`. */
  push(entry: BufferedOutcome): void {
    this.buffer.push(entry);
  }

  /** Take the buffered outcomes, oldest first, for replay to the broker. */
  drain(): BufferedOutcome[] {
    return this.buffer.drain();
  }

  /** Put back outcomes a replay could not deliver (as drained, oldest first). */
  requeue(entries: readonly BufferedOutcome[]): void {
    const dropped = this.buffer.dropped;
    this.buffer.requeue(entries);
    this.reportSince(dropped);
  }

  /** Tell `onDropped` how many outcomes were dropped since the count was `before`. */
  reportSince(before: number): void {
    const n = this.buffer.dropped - before;
    if (n > 0) this.onDropped?.(n);
  }
}
