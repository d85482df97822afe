/**
 * Download phase: one large body (BENCH_GW_DOWNLOAD_BYTES, 1 GiB) streamed through the gateway
 * as plain HTTP, read as fast as this process takes it. The pool holds one tinyproxy and the
 * download host's domain policy gives its leases a short TTL (BENCH_GW_DOWNLOAD_TTL_MS, 1 s), so
 * the lease lives only through the SDK's heartbeats (every TTL/3) inside the gateway. Meanwhile:
 * the gateway's RSS is sampled every 100 ms, and every 250 ms a probe asks the gateway for the
 * same host with no wait (`X-ProxyBroker-Max-Wait: 0`) — a 503 says the only proxy was still
 * held, a 200 would mean it was handed to another request. The broker's renewals and lost leases
 * come from its metrics.
 */
import { pause } from "./pause.js";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { proxiedGet } from "./gateway-client.js";
import type { Answer } from "./gateway-client.js";
import type { GatewayBenchConfig } from "./gateway-config.js";
import { delta, rssBytes, scrape } from "./gateway-proc.js";
import type { Rig } from "./gateway-rig.js";

export interface DownloadResult {
  readonly bytes: number;
  readonly received: number;
  readonly status: number;
  readonly seconds: number;
  readonly ttlMs: number;
  readonly rssBefore: number;
  readonly rssPeak: number;
  readonly rssAfter: number;
  readonly rssSamples: number;
  /** The largest sample in each quarter of the download's time: flat when memory is constant. */
  readonly rssByQuarter: readonly number[];
  /** The broker's renewals and lost leases during the download. */
  readonly renewals: number;
  readonly lost: number;
  /** Probes by answer status ("error" when one failed). */
  readonly probes: Readonly<Record<string, number>>;
}

const POOL = "download";
const SAMPLE_MS = 100;
const PROBE_MS = 250;

export async function runDownload(rig: Rig, config: GatewayBenchConfig): Promise<DownloadResult> {
  const host = rig.site.hosts[1] ?? "";
  await rig.addPool(POOL, [rig.proxies[0] ?? ""]);
  await rig.setPolicy(POOL, { pattern: host, fixedInterval: true, defaultTtl: durationFromMs(config.downloadTtlMs) });
  const base = `http://${host}:${rig.site.port}`;
  const gateway = await rig.gateway(POOL);
  try {
    const warm = await proxiedGet({ proxy: gateway.address, url: `${base}/big?bytes=${2 ** 20}` });
    if (warm.status !== 200) throw new Error(`bench:gateway: the download warm-up answered ${warm.status}`);
    await pause(2_000);
    const rssBefore = rssBytes(gateway.pid);
    const brokerBefore = await scrape(rig.brokerMetrics);
    const samples: Array<{ readonly at: number; readonly rss: number }> = [];
    const sampler = setInterval(() => samples.push({ at: performance.now(), rss: rssBytes(gateway.pid) }), SAMPLE_MS);
    const probes: Record<string, number> = {};
    let downloading = true;
    const probing = (async () => {
      await pause(PROBE_MS); // the download's lease first
      while (downloading) {
        const a = await proxiedGet({ proxy: gateway.address, url: `${base}/page`, headers: { "x-proxybroker-max-wait": "0" } }).catch(
          () => undefined,
        );
        const key = a === undefined ? "error" : String(a.status);
        if (downloading) probes[key] = (probes[key] ?? 0) + 1;
        await pause(PROBE_MS);
      }
    })();
    const started = performance.now();
    let answer: Answer;
    try {
      answer = await proxiedGet({ proxy: gateway.address, url: `${base}/big?bytes=${config.downloadBytes}`, timeoutMs: 600_000 });
    } catch (err) {
      const after = ((performance.now() - started) / 1_000).toFixed(1);
      throw new Error(`bench:gateway: the download failed after ${after} s: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      downloading = false;
      clearInterval(sampler);
      await probing;
    }
    const seconds = (performance.now() - started) / 1_000;
    const brokerAfter = await scrape(rig.brokerMetrics);
    await pause(1_000);
    return {
      bytes: config.downloadBytes,
      received: answer.bytes,
      status: answer.status,
      seconds,
      ttlMs: config.downloadTtlMs,
      rssBefore,
      rssPeak: Math.max(rssBefore, ...samples.map((x) => x.rss)),
      rssAfter: rssBytes(gateway.pid),
      rssSamples: samples.length,
      rssByQuarter: [0, 1, 2, 3].map((q) =>
        Math.max(...samples.filter((x) => Math.min(3, Math.floor(((x.at - started) / (seconds * 1_000)) * 4)) === q).map((x) => x.rss)),
      ),
      renewals: delta(brokerBefore, brokerAfter, "proxybroker_renewals_total"),
      lost: delta(brokerBefore, brokerAfter, "proxybroker_lost_total"),
      probes,
    };
  } finally {
    await gateway.stop();
  }
}
