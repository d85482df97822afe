/**
 * The answer to a `Ping` on the Lease stream (docs/spec.md §7): a `Pong` at once, carrying the
 * broker's clock, which the worker echoes in its next ping as proof that the broker's answers
 * reach it. A worker that keeps a fallback pool is recorded: in contact up to the echoed time, and
 * with its claim when the ping carries one — acknowledged (the pong names its version) only once
 * stored, since the worker uses a claim only then. A ping without a claim is answered before its
 * record is written: a broker whose store is slow still answers, and is slow, not silent. Beyond
 * the stream's in-flight limit (`claims` false) a claim is neither recorded nor acknowledged.
 */
import { create } from "@bufbuild/protobuf";
import { PongSchema } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { Ping, Pong } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { epochMsOf, timestampOf } from "@proxybroker/sdk/wire";
import type { FallbackClaim } from "@proxybroker/sdk/model";
import type { BrokerContext } from "./context.js";
import { checkClaim } from "./validate-claim.js";
import { checkPool, checkWorkerId } from "./validate.js";

export async function answerPing(ctx: BrokerContext, ping: Ping, opts: { readonly claims: boolean } = { claims: true }): Promise<Pong> {
  const now = ctx.clock();
  const pong = (claimVersion = 0): Pong => create(PongSchema, { time: timestampOf(now), claimVersion: BigInt(claimVersion) });
  if (!ping.fallbackPool) return pong();
  let pool: string;
  let workerId: string;
  let claim: FallbackClaim | undefined;
  try {
    pool = checkPool(ping.pool);
    workerId = checkWorkerId(ping.workerId);
    claim = ping.claim === undefined || !opts.claims ? undefined : checkClaim(ping.claim);
  } catch (err) {
    // still a pong (the broker is there), but nothing recorded and no claim acknowledged
    ctx.debugLog?.debug({ worker: ping.workerId.slice(0, 80), err: String(err) }, "ping refused");
    return pong();
  }
  // recorded only in a pool that exists (one with proxies): invented pools leave nothing behind
  await ctx.engine.policySet(pool).catch(() => undefined);
  if (!ctx.engine.serves(pool)) return pong();
  // an echo from the future is no proof of anything later than now
  const heardAt = Math.min(epochMsOf(ping.heardTime), now);
  if (claim === undefined) {
    void ctx.store.hearWorker(pool, workerId, { heardAt }).catch(() => undefined);
    return pong();
  }
  try {
    await ctx.store.hearWorker(pool, workerId, { heardAt, claim, fresh: ping.claim?.fresh === true });
    return pong(claim.version);
  } catch {
    return pong();
  }
}
