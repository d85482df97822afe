/**
 * Internal to the in-memory engine: the candidate index, proxies ordered by score descending
 * then id in byte order.
 *
 * A sorted list cut into chunks of LOAD..2·LOAD records (the layout of Python's
 * sortedcontainers): a chunk is found by binary search over the chunks' last records, then the
 * record by binary search inside it. Costs with n records and c = n / LOAD chunks:
 * insert and remove O(log n + LOAD) (a splice inside one chunk), so a score change — remove,
 * rescore, insert — stays cheap even when thousands of proxies share a score; `at(rank)` O(1)
 * for the first chunk, else O(log c) after an O(c) refresh of chunk offsets once per change;
 * batches (admin add/remove) O(n + k log k).
 */
import { compareIds } from "./ids.js";

/** What the index needs from a record; the record's `score` must not change while indexed. */
export interface Scored {
  readonly id: string;
  readonly score: number;
}

/** Target chunk size; chunks split above 2·LOAD and merge below LOAD/4. */
const LOAD = 512;

/** Score descending, then id ascending. */
function order(a: Scored, b: Scored): number {
  return a.score !== b.score ? b.score - a.score : compareIds(a.id, b.id);
}

/** First position in `list` whose record does not sort before `rec`. */
function lowerBound<T extends Scored>(list: readonly T[], rec: T): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (order(list[mid]!, rec) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A score-ordered set of records; see the module comment for costs. */
export class ScoreIndex<T extends Scored> {
  private chunks: T[][] = [];
  /** Rank of each chunk's first record; stale while `dirty`. */
  private starts: number[] = [];
  private dirty = false;
  private count = 0;

  /** Number of records. */
  get size(): number {
    return this.count;
  }

  /** The record at rank `i` (0 = best). */
  at(i: number): T | undefined {
    if (i < 0 || i >= this.count) return undefined;
    const first = this.chunks[0]!;
    if (i < first.length) return first[i];
    const starts = this.offsets();
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid]! <= i) lo = mid;
      else hi = mid - 1;
    }
    return this.chunks[lo]![i - starts[lo]!];
  }

  /** Add `rec` (must be absent). */
  insert(rec: T): void {
    this.count += 1;
    this.dirty = true;
    if (this.chunks.length === 0) {
      this.chunks.push([rec]);
      return;
    }
    const k = Math.min(this.chunkFor(rec), this.chunks.length - 1);
    const chunk = this.chunks[k]!;
    chunk.splice(lowerBound(chunk, rec), 0, rec);
    if (chunk.length > 2 * LOAD) this.chunks.splice(k + 1, 0, chunk.splice(LOAD));
  }

  /** Remove `rec` (found by its current score); answers whether it was present. */
  remove(rec: T): boolean {
    const k = this.chunkFor(rec);
    const chunk = this.chunks[k];
    if (chunk === undefined) return false;
    const j = lowerBound(chunk, rec);
    if (chunk[j] !== rec) return false;
    chunk.splice(j, 1);
    this.count -= 1;
    this.dirty = true;
    if (chunk.length === 0 && this.chunks.length === 1) this.chunks = [];
    else if (chunk.length < LOAD / 4 && this.chunks.length > 1) {
      const left = k > 0 ? k - 1 : k;
      const merged = this.chunks[left]!.concat(this.chunks[left + 1]!);
      const parts = merged.length > 2 * LOAD ? [merged.slice(0, LOAD), merged.slice(LOAD)] : [merged];
      this.chunks.splice(left, 2, ...parts);
    }
    return true;
  }

  /** Add many absent records at once: O(n + k log k) (the sort finds the existing run). */
  insertMany(recs: readonly T[]): void {
    if (recs.length < 32) {
      for (const rec of recs) this.insert(rec);
      return;
    }
    this.rebuild([...this.chunks.flat(), ...recs].sort(order));
  }

  /** Remove many records at once (absent ones are skipped), O(n) for large batches. */
  removeMany(recs: readonly T[]): void {
    if (recs.length < 32) {
      for (const rec of recs) this.remove(rec);
      return;
    }
    const gone = new Set<T>(recs);
    this.rebuild(this.chunks.flat().filter((rec) => !gone.has(rec)));
  }

  /** Index of the first chunk whose last record does not sort before `rec` (chunks.length if none). */
  private chunkFor(rec: T): number {
    let lo = 0;
    let hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = this.chunks[mid]!;
      if (order(chunk[chunk.length - 1]!, rec) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Rank of each chunk's first record, refreshed after changes. */
  private offsets(): number[] {
    if (this.dirty) {
      this.starts = [];
      let rank = 0;
      for (const chunk of this.chunks) {
        this.starts.push(rank);
        rank += chunk.length;
      }
      this.dirty = false;
    }
    return this.starts;
  }

  /** Replace the content by `sorted`, cut into chunks of LOAD. */
  private rebuild(sorted: T[]): void {
    this.chunks = [];
    for (let i = 0; i < sorted.length; i += LOAD) this.chunks.push(sorted.slice(i, i + LOAD));
    this.count = sorted.length;
    this.dirty = true;
  }
}
