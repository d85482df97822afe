/** Failed acquires of a worker process, by kind (printed with its progress lines). */
export class FailureCounts {
  private readonly counts = new Map<string, number>();

  add(kind: string): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  toJSON(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }
}
