/** The client's mode: leases from the broker, or from the local fallback pool (breaker not closed). */
export type ClientMode = "broker" | "fallback";

/**
 * Where a client stands between the broker and its fallback pool (docs/spec.md §7):
 *
 * - `broker`: leases come from the broker (the breaker is closed);
 * - `switching`: the breaker left the closed state; the switch into fallback runs (broker leases of
 *   this worker's share are adopted by the fallback pool, the others given up) — acquires wait;
 * - `fallback`: that switch is done; leases come from the fallback pool (once its hold allows);
 * - `handingOver`: the breaker closed again; owed releases are settled, fallback leases and their
 *   pacing handed over to the broker — acquires wait, then go to the broker.
 *
 * The mode (`ClientMode`) is what new leases come from: `broker` in `broker` and `handingOver`,
 * `fallback` in `switching` and `fallback`.
 */
export type ClientStateName = "broker" | "switching" | "fallback" | "handingOver";

/** A client's state: its name, and the number of the switch last started (0: none yet). */
export interface ClientState {
  readonly name: ClientStateName;
  /**
   * Switches run one after the other; a switch that ends while a later one is queued behind it
   * changes nothing (the later one's end does).
   */
  readonly switchNo: number;
}

/** What moves a client from one state to another. */
export type ClientStateEvent =
  /** The breaker changed state: `closed` or not (open, half open). */
  | { readonly kind: "breaker"; readonly closed: boolean }
  /** Switch `switchNo` (into fallback, or the hand-over) is done. */
  | { readonly kind: "switched"; readonly switchNo: number };

/** A state change, as the client's `state` event reports it. */
export interface ClientStateChange {
  readonly from: ClientStateName;
  readonly to: ClientStateName;
}

/** A new client's state. */
export const INITIAL_STATE: ClientState = Object.freeze({ name: "broker", switchNo: 0 });

/** The mode of a state: where new leases come from. */
export function modeOf(name: ClientStateName): ClientMode {
  return name === "switching" || name === "fallback" ? "fallback" : "broker";
}

/**
 * The state after `event` in `state`; `state` itself when the event changes nothing. A change of
 * mode starts a switch (a new `switchNo`): into fallback when the breaker leaves the closed state
 * in `broker` or `handingOver`, the hand-over when it closes in `switching` or `fallback`. The end
 * of the switch last started settles the state (`fallback`, or `broker`).
 */
export function transition(state: ClientState, event: ClientStateEvent): ClientState {
  if (event.kind === "breaker") {
    const mode: ClientMode = event.closed ? "broker" : "fallback";
    if (mode === modeOf(state.name)) return state;
    return { name: mode === "fallback" ? "switching" : "handingOver", switchNo: state.switchNo + 1 };
  }
  if (event.switchNo !== state.switchNo) return state;
  if (state.name === "switching") return { name: "fallback", switchNo: state.switchNo };
  if (state.name === "handingOver") return { name: "broker", switchNo: state.switchNo };
  return state;
}
