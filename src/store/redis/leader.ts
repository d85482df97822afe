/**
 * Internal to the Redis store: leader leases (campaign-2.lua), one holder per name across broker
 * replicas, its term raised with every new holder.
 */
import type { Campaign } from "@proxybroker/sdk/engine";
import { asArray, num, str } from "./replies.js";
import { argv } from "./script-args.js";
import { keyv } from "./script-keys.js";
import type { ScriptKeys } from "./scripts.js";
import type { StoreEnv } from "./store-env.js";

function leaderKeys(env: StoreEnv, name: string): ScriptKeys<"campaign"> {
  const [holder, term] = env.keys.leader(name);
  return keyv("campaignKeys", { holder, term });
}

export async function campaign(env: StoreEnv, name: string, owner: string, ttlMs: number): Promise<Campaign> {
  const a = asArray(
    await env.runner.run(
      "campaign",
      leaderKeys(env, name),
      argv("campaign", { owner, ttlMs: Math.max(1, Math.floor(ttlMs)), mode: "c", now: env.now() }),
    ),
  );
  return { leader: num(a, 0) === 1, term: num(a, 1), holder: str(a, 2), remainingMs: num(a, 3) };
}

export async function resign(env: StoreEnv, name: string, owner: string): Promise<void> {
  await env.runner.run("campaign", leaderKeys(env, name), argv("campaign", { owner, ttlMs: 1, mode: "r", now: env.now() }));
}
