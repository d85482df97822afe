import { BrokerClientError } from "./errors.js";

/**
 * When a worker may lease from its fallback pool (docs/spec.md §7): only when the broker is
 * unreachable, not merely slow — and without overlapping the broker's own grants.
 *
 * - The broker said it cannot serve (an in-band UNAVAILABLE: its Redis is down), or the
 *   connection was refused or reset (the broker process is gone): nobody is being granted
 *   anything, so fallback may start at once.
 * - Anything else (timeouts, a connection that went silent): the broker may still be serving the
 *   other workers. Fallback waits until this worker has not heard from the broker for
 *   `absentAfterMs`, longer than the broker's WORKER_ABSENT_AFTER_MS, by which time the broker
 *   reserves this worker's share for it.
 */
export class Reachability {
  private lastContact: number;

  constructor(
    private readonly monotonic: () => number,
    private readonly absentAfterMs: number,
  ) {
    this.lastContact = monotonic();
  }

  /** The broker answered something (any answer on the stream, a snapshot). */
  contact(): void {
    this.lastContact = this.monotonic();
  }

  /** May the worker lease from its fallback pool after `err`? */
  fallbackAllowed(err: unknown): boolean {
    return brokerGone(err) || this.silentFor() >= this.absentAfterMs;
  }

  /** ms until a silent broker allows fallback (0: it does). */
  fallbackIn(): number {
    return Math.max(0, this.absentAfterMs - this.silentFor());
  }

  private silentFor(): number {
    return this.monotonic() - this.lastContact;
  }
}

/** The process at the other end is gone, or the broker said it cannot serve. */
const GONE = /ECONNREFUSED|ECONNRESET|EPIPE|Connection dropped|socket hang up/i;

function brokerGone(err: unknown): boolean {
  if (err instanceof BrokerClientError && err.answered) return err.code === 14; // UNAVAILABLE, in-band
  const text = err instanceof Error ? `${err.message} ${causeText(err)}` : String(err);
  return GONE.test(text);
}

function causeText(err: Error): string {
  const cause: unknown = err.cause;
  if (cause instanceof Error) return `${cause.message} ${causeText(cause)}`;
  if (typeof cause === "object" && cause !== null && "details" in cause && typeof cause.details === "string") return cause.details;
  return "";
}
