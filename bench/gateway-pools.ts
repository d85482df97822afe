/**
 * Pools phase: a flood of distinct pool names (`pool-NAME` in the proxy username) against one
 * gateway, as a careless or hostile client sends them. The gateway keeps at most
 * GATEWAY_MAX_POOLS SDK clients (its default, 64) and answers the rest 400 naming the setting. The
 * phase reads the gateway's RSS idle (after a warm-up in its own pool), right after the flood and
 * after a pause, its CPU while idle after the flood, and checks that a request in its own pool is
 * still served.
 */
import { pause } from "./pause.js";
import { proxiedGet } from "./gateway-client.js";
import type { GatewayBenchConfig } from "./gateway-config.js";
import { rssBytes } from "./gateway-proc.js";
import { processCpuUs } from "./process-cpu.js";
import type { Rig } from "./gateway-rig.js";

export interface PoolsResult {
  /** Distinct pool names sent, one request each. */
  readonly names: number;
  /** Answers by status ("0": no answer). */
  readonly statuses: Readonly<Record<string, number>>;
  readonly floodSeconds: number;
  readonly rssIdle: number;
  readonly rssAfterFlood: number;
  /** After IDLE_SECONDS more without a request. */
  readonly rssSettled: number;
  /** Cores the gateway took in those seconds. */
  readonly idleCores: number;
  /** The status of a request in the gateway's own pool after the flood. */
  readonly ownPoolStatus: number;
}

const POOL = "pools-home";
const CONCURRENCY = 20;
const WARMUP_REQUESTS = 20;
const IDLE_SECONDS = 5;

const basic = (username: string): string => `Basic ${Buffer.from(`${username}:x`).toString("base64")}`;

export async function runPools(rig: Rig, config: GatewayBenchConfig): Promise<PoolsResult> {
  const host = rig.site.hosts[2] ?? "";
  const url = `http://${host}:${rig.site.port}/page`;
  await rig.addPool(POOL, rig.proxies.slice(0, 1));
  const gateway = await rig.gateway(POOL);
  try {
    const get = (username: string): Promise<number> =>
      proxiedGet({ proxy: gateway.address, url, headers: { "proxy-authorization": basic(username) }, timeoutMs: 10_000 }).then(
        (a) => a.status,
        () => 0,
      );
    for (let i = 0; i < WARMUP_REQUESTS; i++) await get("wait-2");
    await pause(1_000);
    const rssIdle = rssBytes(gateway.pid);
    const statuses: Record<string, number> = {};
    let next = 0;
    const started = performance.now();
    const sender = async (): Promise<void> => {
      for (let i = next++; i < config.poolNames; i = next++) {
        const status = await get(`pool-flood${i}-wait-0`);
        statuses[String(status)] = (statuses[String(status)] ?? 0) + 1;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, sender));
    const floodSeconds = (performance.now() - started) / 1_000;
    const rssAfterFlood = rssBytes(gateway.pid);
    const cpuBefore = processCpuUs(gateway.pid);
    await pause(IDLE_SECONDS * 1_000);
    const idleCores = (processCpuUs(gateway.pid) - cpuBefore) / (IDLE_SECONDS * 1e6);
    const rssSettled = rssBytes(gateway.pid);
    const ownPoolStatus = await get("wait-2");
    return { names: config.poolNames, statuses, floodSeconds, rssIdle, rssAfterFlood, rssSettled, idleCores, ownPoolStatus };
  } finally {
    await gateway.stop();
  }
}
