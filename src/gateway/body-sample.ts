/** The part of a body kept for classification (markers sit near the top of a page). */
export const SAMPLE_BYTES = 64 * 1024;

/** A body as it goes by: its first 64 KiB kept, its size counted, nothing else held. */
export class BodySample {
  private readonly parts: Buffer[] = [];
  private kept = 0;
  private total = 0;

  add(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.kept >= SAMPLE_BYTES) return;
    const part = chunk.subarray(0, SAMPLE_BYTES - this.kept);
    this.parts.push(part);
    this.kept += part.length;
  }

  /** The whole body's size. */
  get bytes(): number {
    return this.total;
  }

  /** The first bytes. */
  get sample(): Buffer {
    return Buffer.concat(this.parts);
  }
}
