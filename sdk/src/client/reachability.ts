import { BrokerClientError } from "./errors.js";

/**
 * When a worker may lease from its fallback pool (docs/spec.md §7): only when the broker is
 * unreachable, not merely slow — and without overlapping the broker's own grants.
 *
 * - The broker said it cannot serve (an in-band UNAVAILABLE: its Redis is down), or the
 *   connection was refused or reset (the broker process is gone): nobody is being granted
 *   anything, so fallback may start at once (the fallback pool still holds each pair for its
 *   interval, and at least 250 ms, while other workers give up their broker leases).
 * - Anything else (timeouts, a connection that went silent): the broker may still be serving the
 *   other workers. Fallback waits until this worker has not heard from the broker for
 *   `absentAfterMs` (longer than the broker's WORKER_ABSENT_AFTER_MS, after which the broker
 *   reserves this worker's share for it and stops extending others' leases on it) plus the
 *   longest lease TTL (by then those leases have run out).
 *
 * Either way, no longer than the broker keeps a silent worker's share reserved (its
 * FALLBACK_WINDOW_MS, from the snapshot) after the last contact, minus a margin: past that, the
 * broker may grant the share to others.
 */
/** Why the broker is unreachable: refused (the process is gone), its Redis is down, or silent. */
export type Unreachable = "refused" | "unavailable" | "silent";

export class Reachability {
  private lastContact: number;
  private gone: Unreachable | undefined;

  constructor(
    private readonly opts: {
      readonly monotonic: () => number;
      readonly absentAfterMs: number;
      /** The longest lease TTL the broker granted lately (from the snapshot). */
      readonly leaseHoldMs: () => number;
      /** The broker's FALLBACK_WINDOW_MS (from the snapshot). */
      readonly windowMs: () => number;
    },
  ) {
    this.lastContact = opts.monotonic();
  }

  /** The broker answered something (any answer on the stream, a snapshot). */
  contact(): void {
    this.lastContact = this.opts.monotonic();
    this.gone = undefined;
  }

  /** A broker call failed with `err`; it tells whether the broker is gone. */
  failed(err: unknown): void {
    this.gone = goneHow(err);
  }

  /** Why fallback is allowed (when it is). */
  why(): Unreachable {
    return this.gone ?? "silent";
  }

  /** May the worker lease from its fallback pool now? */
  fallbackAllowed(): boolean {
    return (this.gone !== undefined || this.fallbackIn() === 0) && !this.windowOver();
  }

  /** The broker's fallback window (ms). */
  windowMs(): number {
    return this.opts.windowMs();
  }

  /** The broker may have handed this worker's share to others: fallback is over. */
  windowOver(): boolean {
    const window = this.opts.windowMs();
    const margin = Math.min(10_000, window * 0.1);
    return this.opts.monotonic() - this.lastContact >= window - margin;
  }

  /** ms until a silent broker allows fallback (0: it does). */
  fallbackIn(): number {
    if (this.gone !== undefined) return 0;
    const silentFor = this.opts.monotonic() - this.lastContact;
    return Math.max(0, this.opts.absentAfterMs + this.opts.leaseHoldMs() - silentFor);
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
