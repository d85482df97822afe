/**
 * Whether the broker still answers this worker (docs/spec.md §7). The client pings it on the
 * Lease stream every third of `silentAfterMs` (every half second at most); every answer of any kind counts, and a pong also
 * carries the broker's clock, echoed in the next ping as proof that the broker's answers arrive.
 * A connection that carries no answer for `silentAfterMs` is silent — an outage, not slowness
 * (`onSilent`, once per silence).
 */
export interface LivenessOptions {
  readonly silentAfterMs: number;
  /** Monotonic ms. */
  readonly monotonic: () => number;
  /** Send a ping echoing `heardTime` (the broker clock of the latest pong, 0: none); false when not sent. */
  readonly ping: (heardTime: number) => boolean;
  /** The broker answered nothing for `silentAfterMs`. */
  readonly onSilent: () => void;
}

/** The shortest ping period (a silence bound of 1 s pings every 333 ms). */
const MIN_PING_MS = 200;
/**
 * The longest: the broker counts a worker silent by the pong it echoed last, which is up to two
 * ping periods old when the next ping arrives; half a second keeps that well below
 * WORKER_ABSENT_AFTER_MS (3 s), so a busy worker is not taken for a silent one.
 */
const MAX_PING_MS = 500;

export class Liveness {
  private lastAnswerAt: number;
  /**
   * When the last pong came; before the first, when this client started: a worker restarted with
   * a claim from its snapshot file was last heard by the broker before that at the latest.
   */
  private lastPongAt: number;
  private heardTime = 0;
  private noticed = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: LivenessOptions) {
    this.lastAnswerAt = opts.monotonic();
    this.lastPongAt = this.lastAnswerAt;
  }

  /** How often a ping goes out (ms). */
  get pingEveryMs(): number {
    return Math.max(MIN_PING_MS, Math.min(MAX_PING_MS, Math.floor(this.opts.silentAfterMs / 3)));
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.pingEveryMs);
    this.timer.unref();
    this.opts.ping(this.heardTime);
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The broker answered something. */
  answered(): void {
    this.lastAnswerAt = this.opts.monotonic();
    this.noticed = false;
  }

  /** A pong with the broker's clock `time` (epoch ms). */
  pong(time: number): void {
    this.answered();
    this.lastPongAt = this.lastAnswerAt;
    if (time > this.heardTime) this.heardTime = time;
  }

  /** ms since the last answer of any kind. */
  silentFor(): number {
    return this.opts.monotonic() - this.lastAnswerAt;
  }

  /** The connection is silent now. */
  get silent(): boolean {
    return this.silentFor() >= this.opts.silentAfterMs;
  }

  /** ms since the last pong (none yet: since this client started). */
  sincePong(): number {
    return this.opts.monotonic() - this.lastPongAt;
  }

  /** Ping now (besides the periodic pings): something waits to be said. */
  ping(): void {
    this.opts.ping(this.heardTime);
  }

  /** Ping, and notice a silence. Exposed for tests with a manual clock. */
  tick(): void {
    this.opts.ping(this.heardTime);
    if (this.noticed || !this.silent) return;
    this.noticed = true;
    this.opts.onSilent();
  }
}
