/**
 * The broker's wait queues (src/lease/wait-queues.ts): their bounds, with attempts that are
 * plain functions and real timers of a few ms.
 */
import { describe, expect, it } from "vitest";
import { WaitQueues } from "../../../src/lease/wait-queues.js";
import type { AttemptResult, Waiter } from "../../../src/lease/wait-queues.js";

function waiter(deadline: number, narrow = false): Waiter<string> & { readonly settled: Promise<string> } {
  let done!: (v: string) => void;
  const settled = new Promise<string>((resolve) => (done = resolve));
  return {
    attempt: async (): Promise<AttemptResult<string>> => ({ kind: "denied", retryAfterMs: -1 }),
    deadline,
    narrow,
    signal: undefined,
    settle: (r) => done(r.kind),
    settled,
  };
}

describe("WaitQueues", () => {
  it("refuses a waiter beyond maxPerKey for its key and beyond maxTotal in all, and counts the waiters that leave", async () => {
    const q = new WaitQueues<string>({ clock: Date.now, pollMs: 5, orphaned: () => undefined, maxPerKey: 2, maxTotal: 3 });
    const soon = Date.now() + 30;
    const a = [waiter(soon), waiter(soon, true)];
    expect(q.enqueue("a", a[0]!, -1)).toBeUndefined();
    expect(q.enqueue("a", a[1]!, -1)).toBeUndefined();
    expect(q.enqueue("a", waiter(soon), -1)).toBe("key-full");
    const b = waiter(soon);
    expect(q.enqueue("b", b, -1)).toBeUndefined();
    expect(q.enqueue("c", waiter(soon), -1)).toBe("broker-full");
    expect(q.size).toBe(3);
    expect(q.waitingPlain("a")).toBe(1);
    // at their deadline they are denied and leave: room again
    expect(await Promise.all([...a, b].map((w) => w.settled))).toEqual(["denied", "denied", "denied"]);
    expect(q.size).toBe(0);
    expect(q.waitingPlain("a")).toBe(0);
    expect(q.enqueue("c", waiter(Date.now() + 10), -1)).toBeUndefined();
  });

  it("rejectAll settles every waiter and empties the count", async () => {
    const q = new WaitQueues<string>({ clock: Date.now, pollMs: 50, orphaned: () => undefined });
    const ws = Array.from({ length: 5 }, () => waiter(Date.now() + 60_000));
    for (const [i, w] of ws.entries()) q.enqueue(`k${i % 2}`, w, -1);
    q.rejectAll(new Error("shutdown"));
    expect(await Promise.all(ws.map((w) => w.settled))).toEqual(["error", "error", "error", "error", "error"]);
    expect(q.size).toBe(0);
  });
});
