/**
 * Internal to the conformance suite: how a test opens a store, and short builders for the
 * parameters of store calls.
 */
import { expect, onTestFinished } from "vitest";
import type {
  AcquireParams,
  AcquireResult,
  LeaseView,
  OutcomeInput,
  OutcomeKindName,
  ProxySpecInput,
  ProxyView,
  ReleaseResult,
  RenewResult,
} from "@proxybroker/sdk/model";
import { DEFAULT_SCORING, type ScoringConfig } from "@proxybroker/sdk/model";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import { fakeClock, seededRandom, type FakeClock } from "../../../support/fake-clock.js";

/** What a store under test is built from. */
export interface StoreDeps {
  readonly clock: () => number;
  readonly random: () => number;
  readonly scoring: ScoringConfig;
}

/** What the suite knows of the store under test beyond the LeaseStore interface. */
export interface ConformanceOptions {
  /**
   * Its pools are sharded (src/store/sharded): the score order and top band of G7, the order of
   * events of different shards within one millisecond, and the lowering of an adaptive interval
   * hold per shard, not per pool (docs/sharding.md). The tests of those pool-wide properties are
   * not registered; test/src/store/sharded tests what holds instead.
   */
  readonly sharded?: boolean;
}

/** Whether the tests of pool-wide properties apply (see `ConformanceOptions.sharded`). */
export function poolWide(options: ConformanceOptions): boolean {
  return options.sharded !== true;
}

/** Builds a fresh, empty store for one test; `cleanup` releases whatever it holds. */
export type StoreFactory = (deps: StoreDeps) => Promise<{ store: LeaseStore; cleanup(): Promise<void> }>;

/** One test's store with its clock and scoring. */
export interface Harness {
  readonly store: LeaseStore;
  readonly clock: FakeClock;
  readonly scoring: ScoringConfig;
}

export interface OpenOptions {
  /** Replaces single fields of `DEFAULT_SCORING`. */
  readonly scoring?: Partial<ScoringConfig>;
  /** The store's random source; a seeded PRNG by default. */
  readonly random?: () => number;
}

/** Open a fresh store for the running test; it is cleaned up when the test ends. */
export async function openStore(factory: StoreFactory, options: OpenOptions = {}): Promise<Harness> {
  const clock = fakeClock();
  const scoring: ScoringConfig = { ...DEFAULT_SCORING, ...options.scoring };
  const random = options.random ?? seededRandom(0x5eed);
  const { store, cleanup } = await factory({ clock: () => clock.now(), random, scoring });
  onTestFinished(async () => {
    await cleanup();
  });
  return { store, clock, scoring };
}

export const POOL = "default";
export const DOMAIN = "shop.example.com";
export const TTL = 30_000;
export const BAN_TTL = 3_600_000;
export const SESSION_TTL = 600_000;

/** Acquire parameters with test defaults: pool "default", one domain, ttl 30 s, concurrency 1. */
export function acq(over: Partial<AcquireParams> = {}): AcquireParams {
  return {
    pool: POOL,
    domainKey: DOMAIN,
    workerId: "worker-1",
    requestId: "",
    proxyId: "",
    ttlMs: TTL,
    maxConcurrency: 1,
    minIntervalMs: 0,
    pacing: "release",
    jitterMs: 0,
    adaptive: false,
    maxIntervalMs: 60_000,
    shadowKeys: [],
    banTtlMs: BAN_TTL,
    policyVersion: ".0",
    sessionKey: "",
    sessionTtlMs: SESSION_TTL,
    tier: "",
    labels: {},
    ...over,
  };
}

/** An outcome of `kind` with nothing else reported unless given. */
export function outcome(kind: OutcomeKindName, over: Partial<Omit<OutcomeInput, "kind">> = {}): OutcomeInput {
  return { kind, httpStatus: 0, latencyMs: 0, retryAfterMs: 0, ...over };
}

/** The id of the i-th test proxy (`10.1.x.y:3128`). */
export function proxyId(i: number): string {
  return `10.1.${(i >> 8) & 255}.${i & 255}:3128`;
}

/** A proxy spec for the i-th test proxy. */
export function proxySpec(i: number, over: Partial<ProxySpecInput> = {}): ProxySpecInput {
  const id = over.id ?? proxyId(i);
  return { id, url: `http://${id}`, tier: "datacenter", labels: {}, ...over };
}

/** Add `n` proxies (0 … n−1) to `pool`; returns their ids. */
export async function addProxies(h: Harness, n: number, over: Partial<ProxySpecInput> = {}, pool: string = POOL): Promise<string[]> {
  const specs = Array.from({ length: n }, (_, i) => proxySpec(i, over));
  await h.store.addProxies(pool, specs);
  return specs.map((s) => s.id);
}

/** Expect a grant and return its lease. */
export function granted(r: AcquireResult | undefined, what = "acquire"): LeaseView {
  if (r?.kind !== "granted") return expect.unreachable(`${what}: expected a grant, got ${JSON.stringify(r)}`);
  return r.lease;
}

/** Expect a denial and return its retryAfterMs. */
export function denied(r: AcquireResult | undefined, what = "acquire"): number {
  if (r?.kind !== "denied") return expect.unreachable(`${what}: expected a denial, got ${JSON.stringify(r)}`);
  return r.retryAfterMs;
}

/** Acquire and expect a grant. */
export async function grant(h: Harness, params: AcquireParams = acq()): Promise<LeaseView> {
  return granted(await h.store.acquire(params));
}

/** Acquire and expect a denial; returns retryAfterMs. */
export async function deny(h: Harness, params: AcquireParams = acq()): Promise<number> {
  return denied(await h.store.acquire(params));
}

/** Release a lease with an outcome (no `next`). */
export function release(
  h: Harness,
  lease: LeaseView,
  kind: OutcomeKindName = "SUCCESS",
  over: Partial<OutcomeInput> = {},
): Promise<ReleaseResult> {
  return h.store.release({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: outcome(kind, over) });
}

/** Renew a lease with its own token. */
export function renew(h: Harness, lease: LeaseView, ttlMs = 0): Promise<RenewResult> {
  return h.store.renew({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, ttlMs });
}

/** Every proxy of `pool`, paging through listProxies. */
export async function allProxies(h: Harness, pool: string = POOL): Promise<ProxyView[]> {
  const out: ProxyView[] = [];
  let after = "";
  for (let guard = 0; guard < 1_000; guard++) {
    const page = await h.store.listProxies(pool, { size: 100, after });
    out.push(...page.proxies);
    if (page.next === "") return out;
    after = page.next;
  }
  return expect.unreachable("listProxies never ended");
}

/** The stored view of one proxy (fails the test when it is missing). */
export async function proxyView(h: Harness, id: string, pool: string = POOL): Promise<ProxyView> {
  const found = (await allProxies(h, pool)).find((p) => p.id === id);
  if (found === undefined) return expect.unreachable(`proxy ${id} not listed in pool ${pool}`);
  return found;
}
