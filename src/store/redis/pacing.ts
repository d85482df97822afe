/**
 * Internal to the Redis store: the adaptive pacing a pool learned of its domain-keys, read
 * (domainPacing-1.lua) and raised from another shard's (raisePacing-2.lua).
 */
import type { DomainPacing } from "@proxybroker/sdk/model";
import { asArray, num, str } from "./replies.js";
import { argv } from "./script-args.js";
import { keyv } from "./script-keys.js";
import type { StoreEnv } from "./store-env.js";

export async function domainPacing(env: StoreEnv, pool: string, domainKeys: readonly string[], limit: number): Promise<DomainPacing[]> {
  const keys = env.keys.pool(pool);
  const a = asArray(
    await env.runner.run("domainPacing", keyv("domainPacingKeys", { adapted: keys.adapted }), [
      ...argv("domainPacing", { base: keys.base, limit }),
      ...domainKeys,
    ]),
  );
  const out: DomainPacing[] = [];
  for (let i = 0; i + 4 < a.length; i += 5) {
    out.push({
      domainKey: str(a, i),
      adaptiveMs: num(a, i + 1),
      learnedMs: num(a, i + 2),
      learnedAt: num(a, i + 3),
      loweredAt: num(a, i + 4),
    });
  }
  return out;
}

/** Raise `pacing.domainKey`'s adaptive pacing in `pool` to `pacing` where it is higher (never lowers). */
export async function raisePacing(env: StoreEnv, pool: string, pacing: DomainPacing): Promise<void> {
  const keys = env.keys.pool(pool);
  await env.runner.run(
    "raisePacing",
    keyv("raisePacingKeys", { pacing: keys.pacing(pacing.domainKey), adapted: keys.adapted }),
    argv("raisePacing", {
      domainKey: pacing.domainKey,
      adaptiveMs: Math.max(0, Math.floor(pacing.adaptiveMs)),
      learnedMs: Math.max(0, Math.floor(pacing.learnedMs)),
      learnedAt: Math.max(0, Math.floor(pacing.learnedAt)),
      now: env.now(),
    }),
  );
}
