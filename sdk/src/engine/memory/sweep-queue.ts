/**
 * Internal to the in-memory engine: a rotating FIFO for lazy pruning. Each sweep looks at a few
 * items from the front and either drops them or puts them at the back, so every item is looked
 * at once per rotation. (A Map used the same way, delete + set, leaves holes at the front that
 * every new iterator must skip: that is why this is an array with a moving head.)
 */
export class SweepQueue<T> {
  private items: T[] = [];
  private head = 0;

  /** Number of items queued. */
  get size(): number {
    return this.items.length - this.head;
  }

  /** Queue an item at the back. */
  push(item: T): void {
    this.items.push(item);
  }

  /** Look at up to `count` items from the front; those for which `keep` is false are dropped. */
  sweep(count: number, keep: (item: T) => boolean): void {
    const n = Math.min(count, this.size);
    for (let i = 0; i < n; i++) {
      const item = this.items[this.head]!;
      this.items[this.head] = undefined as T;
      this.head += 1;
      if (keep(item)) this.items.push(item);
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
