import type { ScoringConfig } from "@proxybroker/sdk/model";
import { MemoryStore } from "@proxybroker/sdk/engine";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import { RedisStore, createRedisClient, type RedisClient } from "./redis/index.js";

/** Which store to run on: Redis when a URL is given, else the embedded in-process engine. */
export interface StoreChoice {
  readonly redisUrl: string;
  readonly redisKeyPrefix: string;
  readonly redisCommandTimeoutMs: number;
  readonly scoring: ScoringConfig;
  /** The longest lease TTL: replaced policy sets are kept twice as long. */
  readonly ttlMaxMs: number;
}

/** The store the settings asked for; with Redis, its client too. */
export type CreatedStore =
  | { readonly store: LeaseStore; readonly kind: "embedded" }
  | { readonly store: LeaseStore; readonly kind: "redis"; readonly client: RedisClient };

/** Create the store the settings ask for. */
export function createStore(choice: StoreChoice): CreatedStore {
  const policyHistoryMs = 2 * choice.ttlMaxMs;
  if (choice.redisUrl === "") return { store: new MemoryStore({ scoring: choice.scoring, policyHistoryMs }), kind: "embedded" };
  const client = createRedisClient({ url: choice.redisUrl, commandTimeoutMs: choice.redisCommandTimeoutMs });
  const store = new RedisStore({ client, scoring: choice.scoring, prefix: choice.redisKeyPrefix, policyHistoryMs });
  return { store, kind: "redis", client };
}
