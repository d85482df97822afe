/**
 * Internal to the in-memory engine: a binary min-heap of (key, time) entries with a position
 * map, so that set, delete and pop are O(log n) and get, size and peek are O(1). Used for the
 * busy index of a domain-key and for the quarantine returns of a pool.
 */
export class TimeHeap {
  private readonly keys: string[] = [];
  private readonly times: number[] = [];
  private readonly pos = new Map<string, number>();

  /** Number of entries. */
  get size(): number {
    return this.keys.length;
  }

  /** The time of `key`, or undefined when absent. */
  get(key: string): number | undefined {
    const i = this.pos.get(key);
    return i === undefined ? undefined : this.times[i];
  }

  /** The earliest entry, or undefined when empty. */
  peek(): { key: string; time: number } | undefined {
    if (this.keys.length === 0) return undefined;
    return { key: this.keys[0]!, time: this.times[0]! };
  }

  /** Insert `key` or move it to `time`. */
  set(key: string, time: number): void {
    const i = this.pos.get(key);
    if (i === undefined) {
      this.keys.push(key);
      this.times.push(time);
      this.pos.set(key, this.keys.length - 1);
      this.up(this.keys.length - 1);
      return;
    }
    const old = this.times[i]!;
    this.times[i] = time;
    if (time < old) this.up(i);
    else this.down(i);
  }

  /** Remove `key`; answers whether it was present. */
  delete(key: string): boolean {
    const i = this.pos.get(key);
    if (i === undefined) return false;
    this.removeAt(i);
    return true;
  }

  /** Remove and return the earliest entry when its time is ≤ `limit`. */
  popUpTo(limit: number): { key: string; time: number } | undefined {
    if (this.keys.length === 0 || this.times[0]! > limit) return undefined;
    const top = { key: this.keys[0]!, time: this.times[0]! };
    this.removeAt(0);
    return top;
  }

  private removeAt(i: number): void {
    const last = this.keys.length - 1;
    this.pos.delete(this.keys[i]!);
    if (i !== last) {
      this.keys[i] = this.keys[last]!;
      this.times[i] = this.times[last]!;
      this.pos.set(this.keys[i]!, i);
    }
    this.keys.pop();
    this.times.pop();
    if (i < this.keys.length) {
      this.up(i);
      this.down(i);
    }
  }

  private swap(i: number, j: number): void {
    const k = this.keys[i]!;
    const t = this.times[i]!;
    this.keys[i] = this.keys[j]!;
    this.times[i] = this.times[j]!;
    this.keys[j] = k;
    this.times[j] = t;
    this.pos.set(this.keys[i]!, i);
    this.pos.set(k, j);
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.times[parent]! <= this.times[i]!) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const n = this.keys.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let min = i;
      if (l < n && this.times[l]! < this.times[min]!) min = l;
      if (r < n && this.times[r]! < this.times[min]!) min = r;
      if (min === i) return;
      this.swap(i, min);
      i = min;
    }
  }
}
