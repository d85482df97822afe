import type { BreakerState } from "./breaker.js";
import type { LeaseLostReason } from "./errors.js";
import type { LeaseSource } from "./lease.js";
import type { ClientMode, ClientStateChange } from "./state.js";

export type { ClientMode } from "./state.js";

/** What `leaseLost` tells of a lost lease. */
export interface LeaseLostEvent {
  /** The lease's id when it was lost (a fallback lease handed over to the broker has the broker's id). */
  readonly leaseId: string;
  /** As `LeaseLostError.reason`: EXPIRED, REVOKED or NOT_FOUND. */
  readonly reason: LeaseLostReason;
  /** Where the lease came from when it was lost. */
  readonly source: LeaseSource;
}

/**
 * The events of a `ProxyBrokerClient` and the arguments of their listeners
 * (`client.on("mode", (mode) => …)`). Listeners run synchronously, in the order they were added.
 */
export interface ClientEvents {
  /**
   * Where new leases come from changed: `"fallback"` when the circuit breaker left the closed
   * state (the broker is unreachable), `"broker"` when it closed again. Once per change.
   */
  readonly mode: (mode: ClientMode) => void;
  /**
   * The client's state changed (sdk/src/client/state.ts): `broker` → `switching` when the breaker
   * left the closed state, `switching` → `fallback` when the switch into fallback is done,
   * `fallback` (or `switching`) → `handingOver` when the breaker closed again, `handingOver` →
   * `broker` when the hand-over is done (or → `switching`, the broker lost again meanwhile). Once
   * per change; a change of mode emits `mode` just before.
   */
  readonly state: (change: ClientStateChange) => void;
  /**
   * The circuit breaker changed state: `"open"`, `"halfOpen"` (one probe call is let through) or
   * `"closed"` — every change, also those that leave the mode as it is (open → halfOpen → open).
   */
  readonly breaker: (state: BreakerState) => void;
  /**
   * Back with the broker, `count` (> 0) outcomes buffered meanwhile (of fallback leases) were
   * delivered through `ReportOutcomes`. A broker lease whose release could not reach it is
   * released there once it answers, its outcome with it (not counted here).
   */
  readonly replayed: (count: number) => void;
  /**
   * A held lease was lost — emitted right after its `signal` aborted (with a `LeaseLostError`):
   * the broker said it is gone, no renewal was confirmed before its deadline (EXPIRED), or a
   * switch between broker and fallback gave it up (REVOKED). Not emitted for released leases.
   */
  readonly leaseLost: (lost: LeaseLostEvent) => void;
  /**
   * `count` buffered outcomes were dropped, never to reach the broker: the buffer
   * (`fallback.maxBufferedOutcomes`) was full when an outcome was added, or when outcomes a
   * replay could not deliver were put back. `client.fallback.droppedOutcomes` is the total.
   */
  readonly outcomesDropped: (count: number) => void;
  /**
   * The fallback pool became usable (`client.fallbackUsable` turned true): it holds a non-empty
   * share for this worker that no other worker's share overlaps — a static list, a snapshot file
   * from before this start, or a broker snapshot whose memberships have listed this worker for a
   * membership refresh period + 1 s. From then on an outage no longer stops this worker. Checked
   * whenever the share is rebuilt (snapshot, membership change, static list, snapshot file) and
   * whenever a membership list arrives; emitted again each time it turns true after having turned
   * false (the share became empty, or a membership list no longer named this worker). Never with
   * `fallback.enabled: false`, nor after `close()`.
   */
  readonly fallbackReady: () => void;
}
