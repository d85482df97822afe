/**
 * A bounded running median: the last `window` values in a ring, with a sorted copy kept in step
 * (binary search + splice: O(window) per value, fine for a window of about a hundred).
 */

/** Index of the first element of `sorted` that is ≥ `value`. */
function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The median of the last `window` values added. */
export class RunningMedian {
  private readonly ring: number[] = [];
  private readonly sorted: number[] = [];
  private next = 0;

  /** `window` ≥ 1: how many recent values the median is taken over. */
  constructor(readonly window: number) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError(`median window must be an integer ≥ 1, got ${window}`);
  }

  /** How many values the median is currently taken over (≤ window). */
  get count(): number {
    return this.ring.length;
  }

  /** Add a value (finite, ≥ 0), dropping the oldest once the window is full. */
  add(value: number): void {
    if (!Number.isFinite(value) || value < 0) throw new RangeError(`size must be a finite number ≥ 0, got ${value}`);
    if (this.ring.length < this.window) {
      this.ring.push(value);
    } else {
      const oldest = this.ring[this.next]!;
      this.sorted.splice(lowerBound(this.sorted, oldest), 1);
      this.ring[this.next] = value;
      this.next = (this.next + 1) % this.window;
    }
    this.sorted.splice(lowerBound(this.sorted, value), 0, value);
  }

  /** The median (mean of the two middle values for an even count), undefined when empty. */
  median(): number | undefined {
    const n = this.sorted.length;
    if (n === 0) return undefined;
    const mid = n >>> 1;
    return n % 2 === 1 ? this.sorted[mid]! : (this.sorted[mid - 1]! + this.sorted[mid]!) / 2;
  }
}
