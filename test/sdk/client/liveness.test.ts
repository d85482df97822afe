import { describe, expect, it } from "vitest";
import { Liveness } from "../../../sdk/src/client/liveness.js";

function setup(silentAfterMs = 3_000) {
  let now = 0;
  const pings: number[] = [];
  let silences = 0;
  const liveness = new Liveness({
    silentAfterMs,
    monotonic: () => now,
    ping: (heardTime) => {
      pings.push(heardTime);
      return true;
    },
    onSilent: () => silences++,
  });
  return { liveness, pings, advance: (ms: number) => (now += ms), silences: () => silences };
}

describe("Liveness", () => {
  it("pings every third of the silence bound, echoing the broker clock of the latest pong", () => {
    const t = setup(3_000);
    expect(t.liveness.pingEveryMs).toBe(500);
    expect(setup(1_200).liveness.pingEveryMs).toBe(400);
    t.liveness.tick();
    expect(t.pings).toEqual([0]);
    t.liveness.pong(1_700_000_000_000);
    t.liveness.pong(1_699_999_999_000); // a late, older pong moves nothing back
    t.liveness.tick();
    expect(t.pings).toEqual([0, 1_700_000_000_000]);
  });

  it("a connection that answers nothing for the bound is silent, once; an answer ends the silence", () => {
    const t = setup(3_000);
    t.advance(2_999);
    t.liveness.tick();
    expect(t.liveness.silent).toBe(false);
    expect(t.silences()).toBe(0);
    t.advance(1);
    t.liveness.tick();
    t.liveness.tick();
    expect(t.liveness.silent).toBe(true);
    expect(t.silences()).toBe(1);
    // any answer (not only a pong) counts; a new silence is noticed again
    t.liveness.answered();
    expect(t.liveness.silent).toBe(false);
    expect(t.liveness.sincePong()).toBe(3_000); // no pong yet: counted from the start
    t.advance(3_000);
    t.liveness.tick();
    expect(t.silences()).toBe(2);
    t.liveness.pong(5);
    expect(t.liveness.sincePong()).toBe(0);
  });
});
