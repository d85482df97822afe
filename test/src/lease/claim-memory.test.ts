/** The fallback claims a broker saw lately (src/lease/claim-memory.ts), on a fake clock. */
import { describe, expect, it } from "vitest";
import type { FallbackClaim, WorkerSeen } from "@proxybroker/sdk/model";
import { ClaimMemory } from "../../../src/lease/claim-memory.js";

function claim(version: number, untilMs: number, domainKey = "shop.example"): FallbackClaim {
  return { version, members: ["w"], keys: [{ domainKey, shareKey: domainKey, whole: true, untilMs }] };
}

function seen(workerId: string, claims: readonly FallbackClaim[]): WorkerSeen {
  return { workerId, lastSeenAt: 0, fallbackPoolAt: 1, claims } as WorkerSeen;
}

describe("ClaimMemory", () => {
  it("keeps a claim the store no longer has, until graceMs after its keys ended", () => {
    const m = new ClaimMemory({ graceMs: 1_000 });
    m.note("p", [seen("w", [claim(1, 5_000)])], 0);
    // the worker sent a newer claim (or the store lost the old one): the old one is still known
    m.note("p", [seen("w", [claim(2, 9_000, "other.example")])], 100);
    expect(m.of("p", "w", 200).map((c) => c.version)).toEqual([2, 1]);
    expect(m.of("p", "w", 5_999).map((c) => c.version)).toEqual([2, 1]);
    expect(m.of("p", "w", 6_000).map((c) => c.version)).toEqual([2]);
    expect(m.of("p", "other", 0)).toEqual([]);
    expect(m.of("q", "w", 0)).toEqual([]);
  });

  it("keeps the newest perWorker claims of a worker and maxWorkers workers of a pool", () => {
    const m = new ClaimMemory({ graceMs: 1_000, perWorker: 2, maxWorkers: 2 });
    for (let v = 1; v <= 4; v++) m.note("p", [seen("w", [claim(v, 10_000)])], 0);
    expect(m.of("p", "w", 0).map((c) => c.version)).toEqual([4, 3]);
    m.note("p", [seen("a", [claim(1, 10_000)])], 0);
    m.note("p", [seen("b", [claim(1, 10_000)])], 0);
    expect(m.of("p", "w", 0)).toEqual([]);
    expect(m.of("p", "b", 0).length).toBe(1);
  });
});
