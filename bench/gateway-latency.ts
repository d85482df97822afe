/**
 * Latency phase: one fast page fetched one request at a time (a new connection each, as curl or
 * a crawler without keep-alive), round-robin over three paths to the same tinyproxy — the
 * tinyproxy directly, proxy-chain alone chaining to it, and the gateway (a lease per request from
 * a broker on loopback) — so that the three share the run's conditions. The pool holds that one
 * tinyproxy; the host's domain policy sets no interval and a fixed one (no pacing), so each
 * request's lease is granted at once after the previous one's release.
 *
 * Where the time goes, from the client: the gateway acquires before it forwards (its head
 * comes later than proxy-chain's by about the acquire) and releases before it sends the body's
 * end, which a page with a Content-Length does not wait for). The broker's own acquire time
 * comes from its metrics; what a lease's round trips cost a client from an SDK client in this
 * process, acquiring and releasing on its own pool (the same tinyproxy and policy) afterwards.
 */
import { percentiles } from "./meter.js";
import { proxiedGet } from "./gateway-client.js";
import type { Answer } from "./gateway-client.js";
import type { GatewayBenchConfig } from "./gateway-config.js";
import { leaseRoundTrips } from "./gateway-lease-rtt.js";
import type { LeaseRoundTrips } from "./gateway-lease-rtt.js";
import { delta, scrape } from "./gateway-proc.js";
import type { Rig } from "./gateway-rig.js";
import { processCpuUs } from "./process-cpu.js";

export interface PathLatency {
  readonly label: string;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly meanMs: number;
  /** p50 of the time to the response's head, and of head → end of the body, ms. */
  readonly headP50Ms: number;
  readonly tailP50Ms: number;
  readonly errors: number;
  /** CPU of the path's own proxy process per request, µs (the tinyproxy's for the direct path). */
  readonly cpuUsPerRequest: number;
}

export interface LatencyResult {
  readonly rounds: number;
  readonly direct: PathLatency;
  readonly chain: PathLatency;
  readonly gateway: PathLatency;
  /** Median over rounds of (gateway − proxy-chain) of the same round, ms. */
  readonly pairedMedianMs: number;
  /** The broker's acquire time (its histogram), mean ms. */
  readonly brokerAcquireMeanMs: number;
  readonly sdk: LeaseRoundTrips;
}

const POOL = "latency";
const SDK_POOL = "latency-sdk";

export async function runLatency(rig: Rig, config: GatewayBenchConfig): Promise<LatencyResult> {
  const upstream = rig.proxies[0] ?? "";
  const host = rig.site.hosts[0] ?? "";
  await rig.addPool(POOL, [upstream]);
  await rig.addPool(SDK_POOL, [upstream]);
  for (const pool of [POOL, SDK_POOL]) await rig.setPolicy(pool, { pattern: host, fixedInterval: true });
  const url = `http://${host}:${rig.site.port}/page`;
  const gateway = await rig.gateway(POOL);
  const chain = await rig.chain([upstream]);
  try {
    const paths = [
      { label: "tinyproxy directly", address: upstream, pid: rig.tinyproxyPids[0] ?? 0 },
      { label: "proxy-chain alone → tinyproxy", address: chain.address, pid: chain.pid },
      { label: "gateway → tinyproxy", address: gateway.address, pid: gateway.pid },
    ];
    const times = paths.map((): number[] => []);
    const heads = paths.map((): number[] => []);
    const tails = paths.map((): number[] => []);
    const errors = paths.map(() => 0);
    /** gateway − proxy-chain of each round where both answered. */
    const paired: number[] = [];
    const round = async (r: number, keep: boolean): Promise<void> => {
      const answers: Array<Answer | undefined> = paths.map(() => undefined);
      for (let k = 0; k < paths.length; k++) {
        const i = (r + k) % paths.length; // the order turns every round
        const path = paths[i];
        if (path === undefined) continue;
        const a = await proxiedGet({ proxy: path.address, url }).catch(() => undefined);
        if (a !== undefined && a.status === 200) answers[i] = a;
      }
      if (!keep) return;
      answers.forEach((a, i) => {
        if (a === undefined) {
          errors[i] = (errors[i] ?? 0) + 1;
          return;
        }
        times[i]?.push(a.ms);
        heads[i]?.push(a.headMs);
        tails[i]?.push(a.ms - a.headMs);
      });
      const [, c, g] = answers;
      if (c !== undefined && g !== undefined) paired.push(g.ms - c.ms);
    };
    for (let r = 0; r < config.latencyWarmup; r++) await round(r, false);
    const brokerBefore = await scrape(rig.brokerMetrics);
    const cpuBefore = paths.map((p) => processCpuUs(p.pid));
    for (let r = 0; r < config.latencyRounds; r++) await round(r, true);
    const cpuAfter = paths.map((p) => processCpuUs(p.pid));
    const brokerAfter = await scrape(rig.brokerMetrics);
    const of = (i: number): PathLatency => {
      const t = times[i] ?? [];
      const { p50, p99 } = percentiles(t);
      return {
        label: paths[i]?.label ?? "",
        p50Ms: p50,
        p99Ms: p99,
        meanMs: t.reduce((s, x) => s + x, 0) / t.length,
        headP50Ms: percentiles(heads[i] ?? []).p50,
        tailP50Ms: percentiles(tails[i] ?? []).p50,
        errors: errors[i] ?? 0,
        cpuUsPerRequest: ((cpuAfter[i] ?? 0) - (cpuBefore[i] ?? 0)) / Math.max(1, t.length),
      };
    };
    const sdk = await leaseRoundTrips({
      brokerAddress: rig.broker.address,
      pool: SDK_POOL,
      url,
      cycles: Math.max(100, Math.floor(config.latencyRounds / 4)),
      warmup: Math.min(50, config.latencyWarmup),
    });
    const mean = (name: string): number =>
      (delta(brokerBefore, brokerAfter, `${name}_sum`) / delta(brokerBefore, brokerAfter, `${name}_count`)) * 1_000;
    return {
      rounds: config.latencyRounds,
      direct: of(0),
      chain: of(1),
      gateway: of(2),
      pairedMedianMs: percentiles(paired).p50,
      brokerAcquireMeanMs: mean("proxybroker_acquire_seconds"),
      sdk,
    };
  } finally {
    await chain.stop();
    await gateway.stop();
  }
}
