import type { ProxyBroker } from "../gen/proxybroker/v1/broker_pb.js";
import type { ClientOf } from "../wire/grpc-adapter.js";
import { epochMsOf, policyFromWire, proxyFromWire } from "../wire/codec.js";
import type { FallbackPool, PoolSnapshot } from "../fallback/index.js";

/**
 * Keeps the fallback pool fed: fetches `GetPoolSnapshot` now and every `refreshMs` while the
 * broker is healthy (the caller says when it is not), and hands it to the pool (which may keep it
 * on disk).
 */
export class SnapshotSync {
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<boolean> | undefined;

  constructor(
    private readonly opts: {
      readonly broker: ClientOf<typeof ProxyBroker>;
      readonly pool: string;
      readonly fallback: FallbackPool;
      readonly refreshMs: number;
      readonly callTimeoutMs: number;
      readonly healthy: () => boolean;
    },
  ) {}

  start(): void {
    void this.refresh();
    this.timer = setInterval(() => {
      if (this.opts.healthy()) void this.refresh();
    }, this.opts.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  /** Fetch and use a snapshot now; resolves false when the broker did not answer. */
  refresh(): Promise<boolean> {
    this.inFlight ??= this.fetch().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async fetch(): Promise<boolean> {
    try {
      const res = await this.opts.broker.getPoolSnapshot({ pool: this.opts.pool }, { deadline: this.opts.callTimeoutMs });
      const snap: PoolSnapshot = {
        pool: res.pool,
        proxies: res.proxies.map(proxyFromWire),
        liveWorkers: res.liveWorkers.map((w) => w.workerId),
        policies: res.policies.map(policyFromWire),
        takenAt: epochMsOf(res.snapshotTime),
      };
      await this.opts.fallback.useSnapshot(snap).catch(() => undefined); // a failed file write keeps the pool
      return true;
    } catch {
      return false;
    }
  }
}
