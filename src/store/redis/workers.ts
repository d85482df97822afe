/**
 * Internal to the Redis store: the records of a pool's workers — seen (touchWorker-3.lua), heard
 * with their fallback claims (hearWorker-4.lua), put back after a loss (rememberWorkers-5.lua),
 * and forgotten. Read by `liveWorkers` (admin.ts).
 */
import type { WorkerHeard, WorkerSeen, WorkerTouch } from "@proxybroker/sdk/model";
import { CLAIM_KEEP_MS, encodeClaim, encodeClaims } from "./claims-codec.js";
import { argv } from "./script-args.js";
import { keyv } from "./script-keys.js";
import type { StoreEnv } from "./store-env.js";

/** Workers put back per script call at most. */
const CHUNK = 500;

export async function touchWorker(env: StoreEnv, pool: string, workerId: string, touch: WorkerTouch): Promise<void> {
  const keys = env.keys.pool(pool);
  await env.runner.run(
    "touchWorker",
    keyv("touchWorkerKeys", { workers: keys.workers, fallbackWorkers: keys.fallbackWorkers, listsWorkers: keys.listsWorkers }),
    argv("touchWorker", { workerId, now: env.now(), listsAt: Math.floor(touch.listsAt ?? 0) }),
  );
}

export async function rememberWorkers(env: StoreEnv, pool: string, workers: readonly WorkerSeen[]): Promise<void> {
  const keys = env.keys.pool(pool);
  const wKeys = keyv("rememberWorkersKeys", {
    workers: keys.workers,
    fallbackWorkers: keys.fallbackWorkers,
    yieldingWorkers: keys.yieldingWorkers,
    listsWorkers: keys.listsWorkers,
    heardWorkers: keys.heardWorkers,
  });
  // in chunks: one bounded script call each
  for (let i = 0; i < workers.length; i += CHUNK) {
    const args = argv("rememberWorkers", { now: env.now() });
    for (const w of workers.slice(i, i + CHUNK)) {
      args.push(
        ...argv("workerSeen", {
          workerId: w.workerId,
          lastSeen: Math.floor(w.lastSeenAt),
          fallbackAt: Math.floor(w.fallbackPoolAt),
          yieldsAt: Math.floor(w.yieldsLeasesAt ?? 0),
          listsAt: Math.floor(w.listsAt ?? 0),
          heardAt: Math.floor(w.heardAt ?? 0),
        }),
      );
    }
    await env.runner.run("rememberWorkers", wKeys, args);
  }
  // their claims, one key each: kept when the store has one again
  await Promise.all(
    workers
      .filter((w) => (w.claims ?? []).length > 0)
      .map((w) =>
        env.runner.call((c) => c.set(`${keys.claimsPrefix}${w.workerId}`, encodeClaims(w.claims ?? []), "PX", CLAIM_KEEP_MS, "NX")),
      ),
  );
}

export async function hearWorker(env: StoreEnv, pool: string, workerId: string, heard: WorkerHeard): Promise<void> {
  const keys = env.keys.pool(pool);
  const claim = heard.claim;
  await env.runner.run(
    "hearWorker",
    keyv("hearWorkerKeys", {
      workers: keys.workers,
      fallbackWorkers: keys.fallbackWorkers,
      heardWorkers: keys.heardWorkers,
      claims: `${keys.claimsPrefix}${workerId}`,
    }),
    argv("hearWorker", {
      workerId,
      now: env.now(),
      heardAt: Math.floor(heard.heardAt),
      claimVersion: claim === undefined ? "0" : String(claim.version),
      claim: claim === undefined ? "" : encodeClaim(claim),
      keepMs: CLAIM_KEEP_MS,
      fresh: heard.fresh === true ? "1" : "0",
    }),
  );
}

/** The worker's live, heard and claims records gone; true when it was live-recorded. */
export async function forgetWorker(env: StoreEnv, pool: string, workerId: string): Promise<boolean> {
  const keys = env.keys.pool(pool);
  const [left] = await Promise.all([
    env.runner.call((c) => c.zrem(keys.workers, workerId)),
    env.runner.call((c) => c.zrem(keys.heardWorkers, workerId)),
    env.runner.call((c) => c.del(`${keys.claimsPrefix}${workerId}`)),
  ]);
  return left === 1;
}
