import type { Lease } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { maxWaitOf } from "./lease-stream.js";
import type { AcquireAsk, BenchStream } from "./lease-stream.js";
import type { Meter, StopFlag } from "./meter.js";
import { pause } from "./pause.js";

/** How a loop talks to the broker. */
export type BrokerMode = "separate" | "next";

export interface BrokerLoopOptions {
  readonly stream: BenchStream;
  /** Number of concurrent loops, each with its own worker id. */
  readonly workers: number;
  /** The first loop's index (loops on several streams get distinct worker ids). Default 0. */
  readonly firstIndex?: number;
  /** Pools the loops spread over (loop i uses pools[i mod n]). Default: the default pool. */
  readonly pools?: readonly string[];
  readonly domains: readonly string[];
  /** "separate": an acquire message, then a release message; "next": one release carrying `next`. */
  readonly mode: BrokerMode;
  readonly maxWaitMs: number;
  readonly retryPauseMs: number;
  /** Hold each lease this long before releasing it (0: release at once). */
  readonly holdMs: number;
  readonly meter: Meter;
  readonly stop: StopFlag;
}

/**
 * `workers` loops of acquire → release(SUCCESS) through one Lease stream, each cycling through
 * the domains round-robin. Acquire latency runs from the first message asking for the lease (the
 * acquire, or the release carrying `next`) to the grant, retries after a denial included.
 */
export async function runBrokerLoops(opts: BrokerLoopOptions): Promise<void> {
  await Promise.all(Array.from({ length: opts.workers }, (_, i) => brokerLoop(opts, (opts.firstIndex ?? 0) + i)));
}

async function brokerLoop(opts: BrokerLoopOptions, index: number): Promise<void> {
  const { stream, domains, meter, stop } = opts;
  const maxWait = maxWaitOf(opts.maxWaitMs);
  const workerId = `bench-w${index}`;
  const pool = opts.pools === undefined ? "" : (opts.pools[index % opts.pools.length] ?? "");
  let d = index % domains.length;
  const nextAsk = (): AcquireAsk => {
    const domain = domains[d] ?? "";
    d = (d + 1) % domains.length;
    return { workerId, domain, maxWait, pool };
  };

  let lease: Lease | undefined;
  // The acquire still to be granted: a retry after a denial asks for the same domain again.
  let ask = nextAsk();
  let askedAt = performance.now();
  while (!stop.stopped) {
    if (lease === undefined) {
      const a = await stream.acquire(ask);
      if (!a.ok) {
        meter.failure();
        await pause(opts.retryPauseMs);
        continue;
      }
      meter.granted(performance.now() - askedAt);
      lease = a.lease;
      ask = nextAsk();
    }
    if (opts.holdMs > 0) await pause(opts.holdMs);
    if (opts.mode === "separate") {
      const r = await stream.release(lease);
      lease = undefined;
      if (r.released) meter.cycle();
      else meter.error();
      askedAt = performance.now();
      continue;
    }
    askedAt = performance.now();
    const r = await stream.release(lease, ask);
    lease = undefined;
    if (r.released) meter.cycle();
    else meter.error();
    if (r.next?.ok === true) {
      meter.granted(performance.now() - askedAt);
      lease = r.next.lease;
      ask = nextAsk();
    } else if (r.next !== undefined) {
      meter.failure();
      await pause(opts.retryPauseMs);
    }
  }
  if (lease !== undefined) await stream.release(lease);
}
