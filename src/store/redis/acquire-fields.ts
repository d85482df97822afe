/**
 * Where acquireLease-7.lua finds each field of an acquire request: in its arguments (list
 * `acquire` of script-args.ts), in the keys it is handed (`keys.<name>`, list `acquireKeys`), or
 * in the wanted labels after `now`. `acquireKeys`, `acquireArgs` and `labelArgs` (args.ts) send
 * them so. A field added to `AcquireParams` fails to compile here until it is placed, and so does
 * a field removed, or an argument renamed: the Redis store cannot drop a field of the request
 * unnoticed. (The memory store takes the request whole; the sharded store hands it on whole.)
 */
import type { AcquireParams } from "@proxybroker/sdk/model";
import type { ArgValues } from "./script-args.js";
import type { KeyValues } from "./script-keys.js";

/** An argument of the acquire, one of its keys, or the wanted labels. */
export type AcquireSource = keyof ArgValues<"acquire"> | `keys.${keyof KeyValues<"acquireKeys">}` | "labels";

export const ACQUIRE_FIELDS = {
  pool: ["base", "keys.meta"],
  domainKey: ["domainKey", "keys.busy"],
  workerId: ["workerId"],
  requestId: ["requestId"],
  ttlMs: ["ttlMs"],
  maxConcurrency: ["maxConcurrency"],
  minIntervalMs: ["minIntervalMs"],
  pacing: ["anchor"],
  jitterMs: ["jitterMs"],
  adaptive: ["adaptive"],
  maxIntervalMs: ["maxIntervalMs"],
  shadowKeys: ["shadowKeys"],
  isolation: ["isolationGroup", "affinityMs", "formerGroups", "joinedKeys"],
  banTtlMs: ["banTtlMs"],
  policyVersion: ["policyVersion"],
  proxyId: ["proxyId"],
  fallbackPool: ["fallbackPool"],
  yieldsLeases: ["yieldsLeases"],
  domainUseMs: ["domainUseMs"],
  identity: ["identity"],
  grantUnknownExits: ["grantUnknownExits"],
  honorsTtl: ["honorsTtl"],
  sessionKey: ["sessionKey", "keys.session"],
  sessionTtlMs: ["sessionTtlMs"],
  tier: ["tier", "keys.candidates"],
  labels: ["labels"],
} as const satisfies { readonly [F in keyof AcquireParams]-?: readonly AcquireSource[] };
