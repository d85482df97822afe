import type { BenchConfig } from "./config.js";
import type { BrokerScenario, SeedScenario } from "./scenarios.js";

/** One scenario of the run, in order. */
export type PlannedScenario = BrokerScenario | SeedScenario;

/** The scenarios of the brief: steady (a, b, c), contention, scale. */
export function plan(config: BenchConfig): PlannedScenario[] {
  const steady = { proxies: config.proxies, workers: config.steadyWorkers, domains: config.steadyDomains, holdMs: config.holdMs };
  const contention = {
    proxies: config.proxies,
    workers: config.contentionWorkers,
    domains: config.contentionDomains,
    holdMs: config.contentionHoldMs,
  };
  const wait = `max_wait ${config.contentionMaxWaitMs / 1000} s`;
  const all: PlannedScenario[] = [
    { id: "steady-seed000", label: "steady      seed 000, direct on Redis", system: "seed000", ...steady },
    { id: "steady-separate", label: "steady      broker, separate messages", system: "broker", mode: "separate", maxWaitMs: 0, ...steady },
    { id: "steady-next", label: "steady      broker, release-and-next", system: "broker", mode: "next", maxWaitMs: 0, ...steady },
    {
      id: "steady-next-isolated",
      label: "steady      broker, release-and-next, every domain in one isolation group",
      system: "broker",
      mode: "next",
      maxWaitMs: 0,
      isolationGroup: "bench",
      // past the transition after the policies were set (the default TTL, 30 s, + 3 s)
      settleMs: 35_000,
      ...steady,
    },
    {
      id: "steady-next-isolated-fresh",
      label: "steady      broker, release-and-next, one isolation group, right after it was set",
      system: "broker",
      mode: "next",
      maxWaitMs: 0,
      isolationGroup: "bench",
      ...steady,
    },
    {
      id: "steady-next-unbatched",
      label: "steady      broker, release-and-next, REDIS_BATCH_MAX=1",
      system: "broker",
      mode: "next",
      maxWaitMs: 0,
      env: { REDIS_BATCH_MAX: "1" },
      ...steady,
    },
    { id: "contention-seed000", label: "contention  seed 000, direct on Redis", system: "seed000", ...contention },
    {
      id: "contention-next",
      label: `contention  broker, release-and-next, ${wait}`,
      system: "broker",
      mode: "next",
      maxWaitMs: config.contentionMaxWaitMs,
      ...contention,
    },
    {
      id: "contention-separate",
      label: `contention  broker, separate messages, ${wait}`,
      system: "broker",
      mode: "separate",
      maxWaitMs: config.contentionMaxWaitMs,
      ...contention,
    },
    {
      id: "replicas-next",
      label: "replicas    2 brokers, one Redis, release-and-next",
      system: "broker",
      mode: "next",
      maxWaitMs: 0,
      replicas: 2,
      ...steady,
    },
    {
      id: "cluster-next",
      label: "cluster     3 masters, 3 pools, release-and-next",
      system: "broker",
      mode: "next",
      maxWaitMs: 0,
      store: "cluster",
      pools: 3,
      ...steady,
    },
    {
      id: "cluster-onepool-next",
      label: "cluster     3 masters, 1 pool, release-and-next",
      system: "broker",
      mode: "next",
      maxWaitMs: 0,
      store: "cluster",
      ...steady,
    },
    {
      id: "cluster-sharded-next",
      label: "cluster     3 masters, 1 pool, POOL_SHARDS=3",
      system: "broker",
      mode: "next",
      maxWaitMs: 0,
      store: "cluster",
      env: { POOL_SHARDS: "3" },
      ...steady,
    },
    {
      id: "cluster-replicas-next",
      label: "cluster     3 masters, 3 pools, 2 brokers",
      system: "broker",
      mode: "next",
      maxWaitMs: 0,
      store: "cluster",
      pools: 3,
      replicas: 2,
      ...steady,
    },
    {
      id: "scale-next",
      label: "scale       broker, release-and-next",
      system: "broker",
      mode: "next",
      maxWaitMs: 0,
      ...steady,
      proxies: config.scaleProxies,
    },
  ];
  return config.only.length === 0 ? all : all.filter((s) => config.only.includes(s.id));
}

/** The extra, profiled run of steady release-and-next (its figures are not used for targets). */
export function profiledScenario(config: BenchConfig, cpuProfileDir: string): BrokerScenario {
  return {
    id: "profiled-steady-next",
    label: "profiled    broker, release-and-next (--cpu-prof)",
    system: "broker",
    mode: "next",
    maxWaitMs: 0,
    proxies: config.proxies,
    workers: config.steadyWorkers,
    domains: config.steadyDomains,
    holdMs: config.holdMs,
    cpuProfileDir,
  };
}
