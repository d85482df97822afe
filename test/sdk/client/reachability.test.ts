import { describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { BrokerClientError } from "../../../sdk/src/client/errors.js";
import { Reachability, brokerGone } from "../../../sdk/src/client/reachability.js";

/** A manual clock; `answered` is when the broker last answered anything (the Liveness's record). */
function setup(o: { silentAfterMs?: number; windowMs?: number } = {}) {
  let now = 1_000;
  let answered = now;
  const reach = new Reachability({
    silentFor: () => now - answered,
    silentAfterMs: o.silentAfterMs ?? 3_000,
    windowMs: () => o.windowMs ?? 600_000,
  });
  return {
    reach,
    advance: (ms: number) => (now += ms),
    answer: () => {
      answered = now;
      reach.contact();
    },
  };
}

const refused = new BrokerClientError(
  status.UNAVAILABLE,
  "broker stream broke: 14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:5",
);
const dropped = new BrokerClientError(status.UNAVAILABLE, "broker stream broke: 14 UNAVAILABLE: Connection dropped");
const timeout = new BrokerClientError(status.DEADLINE_EXCEEDED, "no answer from the broker within 2000 ms");

describe("Reachability", () => {
  it("tells a broker that is gone (connection refused, or its own UNAVAILABLE answer) from one that is not", () => {
    expect(brokerGone(refused)).toBe(true);
    const inBand = new BrokerClientError(status.UNAVAILABLE, "store unavailable");
    inBand.answered = true;
    expect(brokerGone(inBand)).toBe(true);
    expect(brokerGone(dropped)).toBe(false); // a keepalive timeout on a silent network says the same
    expect(brokerGone(timeout)).toBe(false);
    expect(brokerGone(new Error("x", { cause: new Error("connect ECONNREFUSED 10.0.0.1:50051") }))).toBe(true);
  });

  it("allows fallback at once when the broker is gone, and forgets it on the next answer", () => {
    const { reach } = setup();
    expect(reach.fallbackAllowed()).toBe(false);
    reach.failed(refused);
    expect(reach.fallbackAllowed()).toBe(true);
    reach.contact();
    expect(reach.fallbackAllowed()).toBe(false);
  });

  it("after other failures, once the connection carried no answer for silentAfterMs: slow is not unreachable", () => {
    const { reach, advance, answer } = setup({ silentAfterMs: 3_000 });
    reach.failed(timeout);
    advance(2_999);
    expect(reach.fallbackAllowed()).toBe(false);
    expect(reach.silent()).toBe(false);
    expect(reach.fallbackIn()).toBe(1);
    advance(1);
    expect(reach.fallbackAllowed()).toBe(true);
    expect(reach.why()).toBe("silent");
    reach.failed(dropped); // still not gone: the silence decides
    expect(reach.fallbackAllowed()).toBe(true);
    // a pong (or any answer) a moment later: slow, not silent
    answer();
    reach.failed(timeout);
    advance(2_000);
    expect(reach.fallbackAllowed()).toBe(false);
  });

  it("ends fallback before the broker's fallback window is over", () => {
    const { reach, advance } = setup({ windowMs: 100_000 });
    reach.failed(refused);
    expect(reach.why()).toBe("refused");
    advance(89_999);
    expect(reach.fallbackAllowed()).toBe(true);
    advance(1); // 100 s − a 10 % margin
    expect(reach.fallbackAllowed()).toBe(false);
    expect(reach.windowOver()).toBe(true);
  });
});
