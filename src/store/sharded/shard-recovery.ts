/**
 * The epoch and holds of a sharded pool: every shard has its own epoch, created or held on its
 * own, so that the loss of one shard's state holds grants on that shard only; the pool's epoch is
 * made of them all (composite.ts).
 */
import type { EpochRequest, EpochState, HoldState } from "@proxybroker/sdk/model";
import type { StoreRecovery } from "@proxybroker/sdk/engine";
import { joinEpochs, joinVersions, splitEpoch } from "./composite.js";
import type { Shards } from "./host.js";

/** The epochs and holds of sharded pools (the server is the inner store's). */
export class ShardRecovery implements Pick<StoreRecovery, "ensureEpoch" | "holdState"> {
  constructor(private readonly at: Shards) {}

  /** Held while any shard holds; the longest TTL of any shard. */
  async holdState(pool: string): Promise<HoldState> {
    const { inner, shards } = this.at;
    const states = await Promise.all(shards.names(pool).map((name) => inner.holdState(name)));
    return {
      heldUntil: Math.max(0, ...states.map((s) => s.heldUntil)),
      longestTtlMs: Math.max(0, ...states.map((s) => s.longestTtlMs)),
      policyVersion: joinVersions(states.map((s) => s.policyVersion)),
    };
  }

  /** Every shard's epoch, with a hold as long as the longest TTL granted lately on any shard of the pool. */
  async ensureEpoch(pool: string, request: EpochRequest): Promise<EpochState> {
    const { inner, shards } = this.at;
    const expected = splitEpoch(request.expected, shards.count(pool));
    const holdMs = Math.max(request.holdMs, (await this.holdState(pool)).longestTtlMs);
    const states = await Promise.all(
      shards.names(pool).map((name, i) => inner.ensureEpoch(name, { ...request, expected: expected[i] ?? "", holdMs })),
    );
    return { epoch: joinEpochs(states.map((s) => s.epoch)), grantsFrom: Math.max(...states.map((s) => s.grantsFrom)) };
  }
}
