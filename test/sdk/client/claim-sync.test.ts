import { describe, expect, it } from "vitest";
import type { ClaimedKey, FallbackClaim } from "@proxybroker/sdk/model";
import { ClaimSync, type ClaimCandidate } from "../../../sdk/src/client/claim-sync.js";
import { fakeClock } from "../../support/fake-clock.js";

function setup() {
  const clock = fakeClock();
  let candidate: ClaimCandidate;
  let inUse: FallbackClaim | undefined;
  let waiting = 0;
  const sync = new ClaimSync({
    candidate: () => candidate,
    inUse: () => inUse,
    use: async (c) => {
      inUse = c;
    },
    clock: () => clock.now(),
    onWaiting: () => waiting++,
  });
  const key = (domainKey: string, untilMs: number, whole = false): ClaimedKey => ({ domainKey, shareKey: domainKey, whole, untilMs });
  return {
    clock,
    sync,
    key,
    set: (c: ClaimCandidate) => (candidate = c),
    inUse: () => inUse,
    waiting: () => waiting,
  };
}

describe("ClaimSync", () => {
  it("uses a claim only once a pong acknowledged its version, and sends one claim at a time", async () => {
    const t = setup();
    const now = t.clock.now();
    t.set({ members: ["a", "b"], keys: [t.key("x.example", now + 600_000)] });
    t.sync.update();
    const first = t.sync.toSend;
    expect(first?.keys.map((k) => k.domainKey)).toEqual(["x.example"]);
    expect(t.waiting()).toBe(1);
    expect(t.inUse()).toBeUndefined();
    // the lists change before the pong: the claim that waits stays the one sent
    t.set({ members: ["a", "b", "c"], keys: [t.key("x.example", now + 600_000)] });
    t.sync.update();
    expect(t.sync.toSend).toBe(first);
    // a pong for another version acknowledges nothing
    await t.sync.acknowledged(first!.version - 1);
    expect(t.inUse()).toBeUndefined();
    await t.sync.acknowledged(first!.version);
    expect(t.inUse()).toBe(first);
    // then the newer candidate goes out, with a higher version
    const second = t.sync.toSend;
    expect(second?.members).toEqual(["a", "b", "c"]);
    expect(second!.version).toBeGreaterThan(first!.version);
    await t.sync.acknowledged(second!.version);
    expect(t.inUse()).toBe(second);
    expect(t.sync.toSend).toBeUndefined();
  });

  it("the first claim of a process goes out fresh (the broker forgets a predecessor's), later ones do not", async () => {
    const t = setup();
    const now = t.clock.now();
    t.set({ members: ["a"], keys: [] });
    t.sync.update();
    const first = t.sync.toSend;
    expect(t.sync.fresh).toBe(true);
    await t.sync.acknowledged(first!.version);
    expect(t.sync.fresh).toBe(false);
    t.set({ members: ["a"], keys: [t.key("x.example", now + 600_000)] });
    t.sync.update();
    expect(t.sync.toSend?.keys.length).toBe(1);
    expect(t.sync.fresh).toBe(false);
  });

  it("sends no new claim while the one in use covers the candidate; again when a key would end before long", async () => {
    const t = setup();
    const now = t.clock.now();
    t.set({ members: ["a"], keys: [t.key("x.example", now + 600_000, true)] });
    t.sync.update();
    await t.sync.acknowledged(t.sync.toSend!.version);
    // the listing's end moved on by a minute: no new claim
    t.clock.advance(60_000);
    t.set({ members: ["a"], keys: [t.key("x.example", t.clock.now() + 600_000, true)] });
    t.sync.update();
    expect(t.sync.toSend).toBeUndefined();
    // past half of the candidate's span: sent again
    t.clock.advance(250_000);
    t.set({ members: ["a"], keys: [t.key("x.example", t.clock.now() + 600_000, true)] });
    t.sync.update();
    expect(t.sync.toSend?.keys[0]?.untilMs).toBe(t.clock.now() + 600_000);
    // a key served otherwise is a new claim at once
    await t.sync.acknowledged(t.sync.toSend!.version);
    t.set({ members: ["a"], keys: [t.key("x.example", t.clock.now() + 600_000, false)] });
    t.sync.update();
    expect(t.sync.toSend?.keys[0]?.whole).toBe(false);
  });

  it("claims nothing while the pool has no candidate (no snapshot, or a broker that lists no domain-keys)", () => {
    const t = setup();
    t.set(undefined);
    t.sync.update();
    expect(t.sync.toSend).toBeUndefined();
    expect(t.waiting()).toBe(0);
  });
});
