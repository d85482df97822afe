/**
 * Rendezvous hashing of fallback shares: the hash, determinism, one owner per proxy, balance, and
 * minimal movement when the worker set changes.
 */
import { describe, expect, it } from "vitest";
import { ownerOf, rendezvousWeight, shareOf } from "../../../sdk/src/model/rendezvous.js";

const MASK = (1n << 64n) - 1n;

/** Reference FNV-1a 64 + fmix64 in BigInt, written from the definitions. */
function referenceWeight(worker: string, proxy: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(`${worker}\n${proxy}`)) h = ((h ^ BigInt(b)) * 0x100000001b3n) & MASK;
  h ^= h >> 33n;
  h = (h * 0xff51afd7ed558ccdn) & MASK;
  h ^= h >> 33n;
  h = (h * 0xc4ceb9fe1a85ec53n) & MASK;
  return h ^ (h >> 33n);
}

const proxies = (n: number): string[] => Array.from({ length: n }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:8080`);
const workers = (n: number): string[] => Array.from({ length: n }, (_, i) => `crawler-${i}-4242-1700000000000`);

describe("rendezvous weight", () => {
  it("is FNV-1a 64 of worker \\n proxy with the fmix64 avalanche, on UTF-8 bytes", () => {
    // Known FNV-1a 64 vector: "a" → 0xaf63dc4c8601ec8c; the reference must reproduce it.
    let h = 0xcbf29ce484222325n;
    h = ((h ^ 0x61n) * 0x100000001b3n) & MASK;
    expect(h).toBe(0xaf63dc4c8601ec8cn);
    const pairs: [string, string][] = [
      ["", ""],
      ["w1", "10.0.0.1:8080"],
      ["höst-ß-😀", "proxy.example.com:3128"],
      [`worker-${"x".repeat(300)}`, "1.2.3.4:1"],
    ];
    for (const [w, p] of pairs) expect(rendezvousWeight(w, p)).toBe(referenceWeight(w, p));
    for (const [i, p] of proxies(500).entries()) expect(rendezvousWeight(`w${i}`, p)).toBe(referenceWeight(`w${i}`, p));
  });

  it("is deterministic and pinned (a change would reshuffle every fleet's shares)", () => {
    expect(rendezvousWeight("w1", "10.0.0.1:8080")).toBe(rendezvousWeight("w1", "10.0.0.1:8080"));
    expect(rendezvousWeight("w1", "10.0.0.1:8080")).not.toBe(rendezvousWeight("w2", "10.0.0.1:8080"));
    expect(ownerOf("10.0.0.1:8080", ["a", "b", "c"])).toBe(ownerOf("10.0.0.1:8080", ["c", "b", "a", "a"]));
  });
});

describe("ownerOf / shareOf", () => {
  it("gives every proxy exactly one owner, the same one every worker computes", () => {
    const ps = proxies(2_000);
    const ws = workers(7);
    const shares = ws.map((w) => shareOf(ps, ws, w));
    const seen = new Map<string, string>();
    for (const [i, share] of shares.entries()) {
      for (const p of share) {
        expect(seen.has(p), `${p} owned twice`).toBe(false);
        seen.set(p, ws[i]!);
      }
    }
    expect(seen.size).toBe(ps.length);
    for (const p of ps.slice(0, 200)) expect(ownerOf(p, ws)).toBe(seen.get(p));
  });

  it("counts self among the workers and deduplicates", () => {
    const ps = proxies(300);
    const withSelf = shareOf(ps, ["a", "b"], "c");
    expect(withSelf).toEqual(shareOf(ps, ["a", "b", "c", "c", "a"], "c"));
    expect(withSelf.length).toBeGreaterThan(0);
    expect(withSelf.length).toBeLessThan(ps.length);
    expect(shareOf(ps, [], "solo")).toEqual(ps);
    expect(ownerOf("x:1", [])).toBeUndefined();
  });

  it("balances 1,000 proxies over 10 workers within reason", () => {
    const ps = proxies(1_000);
    const ws = workers(10);
    const sizes = ws.map((w) => shareOf(ps, ws, w).length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(1_000);
    // Binomial(1000, 0.1): sd ≈ 9.5; ±45 is far beyond chance for a uniform hash.
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(55);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(145);
  });

  it("moves only the joining worker's proxies when a worker joins, and only the leaver's when one leaves", () => {
    const ps = proxies(1_000);
    const ws = workers(10);
    const before = new Map(ps.map((p) => [p, ownerOf(p, ws)]));
    const joined = [...ws, "newcomer"];
    let moved = 0;
    for (const p of ps) {
      const now = ownerOf(p, joined);
      if (now !== before.get(p)) {
        expect(now).toBe("newcomer");
        moved++;
      }
    }
    expect(moved).toBeGreaterThan(40); // ~1000/11 ≈ 91
    expect(moved).toBeLessThan(150);

    const leaver = ws[3]!;
    const left = ws.filter((w) => w !== leaver);
    for (const p of ps) {
      const was = before.get(p);
      if (was !== leaver) expect(ownerOf(p, left)).toBe(was);
      else expect(ownerOf(p, left)).not.toBe(leaver);
    }
  });

  it("computes one share of 10,000 proxies × 50 workers fast enough for a periodic refresh", () => {
    const ps = proxies(10_000);
    const ws = workers(50);
    const t0 = performance.now();
    const share = shareOf(ps, ws, ws[0]!);
    const ms = performance.now() - t0;
    expect(share.length).toBeGreaterThan(100);
    expect(ms).toBeLessThan(2_000); // ~40 ms measured; generous for slow CI machines
  });
});
