import { BrokerClientError } from "./errors.js";

/**
 * When a worker may lease from its fallback pool (docs/spec.md §7): only when the broker is
 * unreachable, not merely slow — and without overlapping the broker's own grants.
 *
 * - The broker said it cannot serve (an in-band UNAVAILABLE: its Redis is down), or the
 *   connection was refused (the broker process is gone): nobody is being granted anything, so
 *   fallback may start at once (the fallback pool still holds each pair for its interval, and at
 *   least 250 ms, while other workers give up their broker leases).
 * - The connection carried no answer at all — not even a pong to the pings the client sends
 *   every third of it — for `silentAfterMs`: the broker, or the network to it, is gone for this
 *   worker (a silent partition). Fallback is allowed; its pool serves the claim only once the
 *   broker surely reserved it (`silentHoldMs`).
 * - A broker that answers something, but not a call in time, is slow: the caller's
 *   DEADLINE_EXCEEDED, no fallback.
 *
 * Either way, no longer than the broker keeps a silent worker's claim reserved (its
 * FALLBACK_WINDOW_MS, from the snapshot) after the last answer, minus a margin: past that, the
 * broker may grant the claim to others.
 */
/** Why the broker is unreachable: refused (the process is gone), its Redis is down, or silent. */
export type Unreachable = "refused" | "unavailable" | "silent";

export class Reachability {
  private gone: Unreachable | undefined;

  constructor(
    private readonly opts: {
      /** How long the broker has answered nothing (ms). */
      readonly silentFor: () => number;
      readonly silentAfterMs: number;
      /** The broker's FALLBACK_WINDOW_MS (from the snapshot). */
      readonly windowMs: () => number;
    },
  ) {}

  /** The broker answered something (any answer on the stream, a pong, a snapshot). */
  contact(): void {
    this.gone = undefined;
  }

  /** A broker call failed with `err`; it tells whether the broker is gone. */
  failed(err: unknown): void {
    this.gone = goneHow(err) ?? this.gone;
  }

  /** Why fallback is allowed (when it is). */
  why(): Unreachable {
    return this.gone ?? "silent";
  }

  /** The connection has carried no answer for `silentAfterMs`. */
  silent(): boolean {
    return this.opts.silentFor() >= this.opts.silentAfterMs;
  }

  /** May the worker lease from its fallback pool now? */
  fallbackAllowed(): boolean {
    return (this.gone !== undefined || this.silent()) && !this.windowOver();
  }

  /** The broker's fallback window (ms). */
  windowMs(): number {
    return this.opts.windowMs();
  }

  /** The broker may have handed this worker's claim to others: fallback is over. */
  windowOver(): boolean {
    const window = this.opts.windowMs();
    const margin = Math.min(10_000, window * 0.1);
    return this.opts.silentFor() >= window - margin;
  }

  /** ms until a silent broker counts as unreachable (0: it does, or is gone). */
  fallbackIn(): number {
    if (this.gone !== undefined) return 0;
    return Math.max(0, this.opts.silentAfterMs - this.opts.silentFor());
  }
}

/**
 * A connection refused: nothing listens at the broker's address (the process is gone). A broken
 * connection alone ("Connection dropped", a reset) is not enough: a keepalive timeout on a silent
 * network says the same. A partition that rejects connections (a firewall REJECT) cannot be told
 * from a crash (docs/spec.md §7 states what that costs).
 */
const GONE = /ECONNREFUSED/;

/** A draining broker's answer: other replicas may be serving. */
const DRAINING = /shutting down/;

/** The broker process is gone or said it cannot serve (see `Reachability`). */
export function brokerGone(err: unknown): boolean {
  return goneHow(err) !== undefined;
}

function goneHow(err: unknown): Unreachable | undefined {
  if (err instanceof BrokerClientError && err.answered) {
    // UNAVAILABLE in-band: its Redis is down — unless it is draining (another replica may serve)
    return err.code === 14 && !DRAINING.test(err.message) ? "unavailable" : undefined;
  }
  const text = err instanceof Error ? `${err.message} ${causeText(err)}` : String(err);
  return GONE.test(text) ? "refused" : undefined;
}

function causeText(err: Error): string {
  const cause: unknown = err.cause;
  if (cause instanceof Error) return `${cause.message} ${causeText(cause)}`;
  if (typeof cause === "object" && cause !== null && "details" in cause && typeof cause.details === "string") return cause.details;
  return "";
}
