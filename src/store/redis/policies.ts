/**
 * Internal to the Redis store: domain policies of a pool (hash pattern → JSON) and the policy
 * version (meta field pv, "0" when never set) that acquires present.
 */
import type { DomainPolicySpec, PolicySet } from "@proxybroker/sdk/model";
import { byteOrder } from "./admin.js";
import { ScriptReplyError } from "./errors.js";
import { asArray, str } from "./replies.js";
import type { StoreEnv } from "./store-env.js";

/** Create or replace the policy with this pattern; the version changes. */
export async function setPolicy(env: StoreEnv, pool: string, policy: DomainPolicySpec): Promise<void> {
  const keys = env.keys.pool(pool);
  const { pattern, group, maxConcurrency, minIntervalMs, defaultTtlMs, banTtlMs } = policy;
  const json = JSON.stringify({ group, maxConcurrency, minIntervalMs, defaultTtlMs, banTtlMs });
  await env.runner.run("setPolicy", [keys.policies, keys.meta], [pattern, json]);
}

/** Delete by pattern; the version changes only when something was deleted. */
export async function deletePolicy(env: StoreEnv, pool: string, pattern: string): Promise<boolean> {
  const keys = env.keys.pool(pool);
  return (await env.runner.run("deletePolicy", [keys.policies, keys.meta], [pattern])) === 1;
}

/** The policies in pattern order, with the current version ("0" when never set). */
export async function listPolicies(env: StoreEnv, pool: string): Promise<PolicySet> {
  const keys = env.keys.pool(pool);
  const a = asArray(await env.runner.run("listPolicies", [keys.policies, keys.meta], []));
  const policies: DomainPolicySpec[] = [];
  for (let i = 1; i + 1 < a.length; i += 2) policies.push(parsePolicy(str(a, i), str(a, i + 1)));
  policies.sort((x, y) => byteOrder(x.pattern, y.pattern));
  return { version: str(a, 0), policies };
}

function field(obj: object, name: string): unknown {
  return Object.hasOwn(obj, name) ? Reflect.get(obj, name) : undefined;
}

function parsePolicy(pattern: string, json: string): DomainPolicySpec {
  const value: unknown = JSON.parse(json);
  if (typeof value !== "object" || value === null) throw new ScriptReplyError(`policy ${pattern} is not an object`);
  const n = (name: string): number => {
    const v = field(value, name);
    return typeof v === "number" && Number.isFinite(v) ? v : 0;
  };
  const group = field(value, "group");
  return {
    pattern,
    group: typeof group === "string" ? group : "",
    maxConcurrency: n("maxConcurrency"),
    minIntervalMs: n("minIntervalMs"),
    defaultTtlMs: n("defaultTtlMs"),
    banTtlMs: n("banTtlMs"),
  };
}
