import { describe, expect, it } from "vitest";
import { INITIAL_STATE, modeOf, transition } from "../../../sdk/src/client/state.js";
import type { ClientState, ClientStateEvent, ClientStateName } from "../../../sdk/src/client/state.js";

const open: ClientStateEvent = { kind: "breaker", closed: false };
const closed: ClientStateEvent = { kind: "breaker", closed: true };
const switched = (switchNo: number): ClientStateEvent => ({ kind: "switched", switchNo });
const at = (name: ClientStateName, switchNo: number): ClientState => ({ name, switchNo });

/** The states a run of events passes through (names only, changes only). */
function run(events: readonly ClientStateEvent[]): ClientStateName[] {
  let s = INITIAL_STATE;
  const names: ClientStateName[] = [s.name];
  for (const e of events) {
    const next = transition(s, e);
    if (next !== s) names.push(next.name);
    s = next;
  }
  return names;
}

describe("client state", () => {
  it("starts in broker mode, no switch yet", () => {
    expect(INITIAL_STATE).toEqual({ name: "broker", switchNo: 0 });
    expect(modeOf("broker")).toBe("broker");
    expect(modeOf("switching")).toBe("fallback");
    expect(modeOf("fallback")).toBe("fallback");
    expect(modeOf("handingOver")).toBe("broker");
  });

  it("goes broker → switching → fallback → handingOver → broker, each switch numbered", () => {
    const s1 = transition(INITIAL_STATE, open);
    expect(s1).toEqual(at("switching", 1));
    const s2 = transition(s1, switched(1));
    expect(s2).toEqual(at("fallback", 1));
    const s3 = transition(s2, closed);
    expect(s3).toEqual(at("handingOver", 2));
    expect(transition(s3, switched(2))).toEqual(at("broker", 2));
  });

  it("changes nothing (the same object) when the mode stays: half open after open, closed in broker mode", () => {
    for (const s of [at("switching", 1), at("fallback", 1)]) expect(transition(s, open)).toBe(s);
    for (const s of [INITIAL_STATE, at("handingOver", 2), at("broker", 2)]) expect(transition(s, closed)).toBe(s);
  });

  it("a switch's end counts only when it is the switch last started", () => {
    // lost, back, lost again before the first switch ended: three switches queued
    let s = transition(transition(transition(INITIAL_STATE, open), closed), open);
    expect(s).toEqual(at("switching", 3));
    expect(transition(s, switched(1))).toBe(s);
    expect(transition(s, switched(2))).toBe(s);
    s = transition(s, switched(3));
    expect(s).toEqual(at("fallback", 3));
    // an end in a settled state changes nothing
    expect(transition(s, switched(3))).toBe(s);
    expect(transition(at("broker", 2), switched(2))).toEqual(at("broker", 2));
  });

  it("the broker back while entering fallback hands over; lost again while handing over switches in", () => {
    expect(run([open, closed, switched(1), switched(2)])).toEqual(["broker", "switching", "handingOver", "broker"]);
    expect(run([open, switched(1), closed, open, switched(2), switched(3)])).toEqual([
      "broker",
      "switching",
      "fallback",
      "handingOver",
      "switching",
      "fallback",
    ]);
  });

  it("the mode changes exactly when the breaker crosses closed ⇄ not closed", () => {
    const events = [open, open, switched(1), open, closed, closed, open, switched(3), closed, switched(4)];
    let s = INITIAL_STATE;
    const modes: string[] = [];
    for (const e of events) {
      const next = transition(s, e);
      if (modeOf(next.name) !== modeOf(s.name)) modes.push(modeOf(next.name));
      s = next;
    }
    expect(modes).toEqual(["fallback", "broker", "fallback", "broker"]);
    expect(s).toEqual(at("broker", 4));
  });
});
