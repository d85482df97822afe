/**
 * Internal to the Redis store: domain policies of a pool (hash pattern → JSON), the policy
 * version (meta field pv, "0" when never set) that acquires present, and the history of replaced
 * sets (lua/includes/policyHistory.lua).
 */
import { storedExpectations, storedIsolation } from "@proxybroker/sdk/model";
import type { DomainPolicySpec, PolicySet, RetiredPolicySet } from "@proxybroker/sdk/model";
import { HISTORY_MAX } from "@proxybroker/sdk/engine";
import { byteOrder } from "./admin.js";
import { ScriptReplyError } from "./errors.js";
import { asArray, num, str } from "./replies.js";
import type { StoreEnv } from "./store-env.js";
import { argv } from "./script-args.js";
import { keyv } from "./script-keys.js";

/** The keys of setPolicy and deletePolicy. */
function keysOf(env: StoreEnv, pool: string): { policies: string; meta: string; history: string } {
  const keys = env.keys.pool(pool);
  return { policies: keys.policies, meta: keys.meta, history: keys.policyHistory };
}

/** Create or replace the policy with this pattern; the version changes. */
export async function setPolicy(env: StoreEnv, pool: string, policy: DomainPolicySpec): Promise<void> {
  const { pattern, ...rest } = policy;
  await env.runner.run(
    "setPolicy",
    keyv("setPolicyKeys", keysOf(env, pool)),
    argv("setPolicy", { pattern, json: JSON.stringify(rest), now: env.now(), keepMs: env.policyHistoryMs, keepMax: HISTORY_MAX }),
  );
}

/** Delete by pattern; the version changes only when something was deleted. */
export async function deletePolicy(env: StoreEnv, pool: string, pattern: string): Promise<boolean> {
  const reply = await env.runner.run(
    "deletePolicy",
    keyv("deletePolicyKeys", keysOf(env, pool)),
    argv("deletePolicy", { pattern, now: env.now(), keepMs: env.policyHistoryMs, keepMax: HISTORY_MAX }),
  );
  return reply === 1;
}

/** The policies in pattern order, with the current version ("0" when never set) and history. */
export async function listPolicies(env: StoreEnv, pool: string): Promise<PolicySet> {
  const keys = env.keys.pool(pool);
  const a = asArray(
    await env.runner.run(
      "listPolicies",
      keyv("listPoliciesKeys", { policies: keys.policies, meta: keys.meta, history: keys.policyHistory, all: keys.all }),
      argv("listPolicies", { now: env.now(), keepMs: env.policyHistoryMs }),
    ),
  );
  const flat = asArray(a[1]);
  const policies: DomainPolicySpec[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) policies.push(parsePolicy(str(flat, i), str(flat, i + 1)));
  policies.sort((x, y) => byteOrder(x.pattern, y.pattern));
  const history = asArray(a[2]).map((_, i, all) => parseHistory(str(all, i)));
  return { version: str(a, 0), epoch: str(a, 3), policies, history, proxies: num(a, 4) };
}

/** One history entry: "<retiredAt>\n" then "<pattern>\t<json>\n" per policy. */
function parseHistory(text: string): RetiredPolicySet {
  const [head, ...lines] = text.split("\n");
  const retiredAt = Number(head);
  if (!Number.isFinite(retiredAt)) throw new ScriptReplyError(`policy history entry without a time: ${text.slice(0, 40)}`);
  const policies = lines
    .filter((line) => line !== "")
    .map((line) => {
      const tab = line.indexOf("\t");
      if (tab < 0) throw new ScriptReplyError(`policy history line without a tab: ${line.slice(0, 40)}`);
      return parsePolicy(line.slice(0, tab), line.slice(tab + 1));
    })
    .sort((x, y) => byteOrder(x.pattern, y.pattern));
  return { retiredAt, policies };
}

function field(obj: object, name: string): unknown {
  return Object.hasOwn(obj, name) ? Reflect.get(obj, name) : undefined;
}

/** A stored policy; fields a policy stored by an earlier version lacks get their defaults. */
function parsePolicy(pattern: string, json: string): DomainPolicySpec {
  const value: unknown = JSON.parse(json);
  if (typeof value !== "object" || value === null) throw new ScriptReplyError(`policy ${pattern} is not an object`);
  const n = (name: string): number => {
    const v = field(value, name);
    return typeof v === "number" && Number.isFinite(v) ? v : 0;
  };
  const group = field(value, "group");
  const expectations = storedExpectations(field(value, "expectations"));
  return {
    pattern,
    group: typeof group === "string" ? group : "",
    maxConcurrency: n("maxConcurrency"),
    minIntervalMs: n("minIntervalMs"),
    defaultTtlMs: n("defaultTtlMs"),
    banTtlMs: n("banTtlMs"),
    pacing: field(value, "pacing") === "grant" ? "grant" : "release",
    jitterMs: n("jitterMs"),
    maxIntervalMs: n("maxIntervalMs"),
    fixedInterval: field(value, "fixedInterval") === true,
    ...(expectations === undefined ? {} : { expectations }),
    ...storedIsolation(field(value, "isolationGroup"), n("affinityWindowMs")),
  };
}
