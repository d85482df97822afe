/** The tables `npm run bench:gateway` prints (Markdown, so that they paste into docs/benchmarks.md). */
import type { DownloadResult } from "./gateway-download.js";
import type { LatencyResult, PathLatency } from "./gateway-latency.js";
import type { ThroughputRow } from "./gateway-throughput.js";
import type { PoolsResult } from "./gateway-pools.js";
import type { TunnelsResult } from "./gateway-tunnels.js";

export interface GatewayBenchResults {
  latency?: LatencyResult;
  throughput?: readonly ThroughputRow[];
  tunnels?: TunnelsResult;
  download?: DownloadResult;
  pools?: PoolsResult;
}

const f = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : "–");
const mb = (bytes: number): string => f(bytes / 2 ** 20, 1);
const signed = (n: number, digits: number): string => (n >= 0 ? `+${f(n, digits)}` : f(n, digits));

/** A Markdown table; the first column left-aligned, the others right-aligned. */
export function table(head: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `:${"-".repeat(w + 1)}` : `${"-".repeat(w + 1)}:`)).join("|")}|`;
  return [line(head), rule, ...rows.map(line)].join("\n");
}

function latencyText(r: LatencyResult): string {
  const row = (p: PathLatency): string[] => [
    p.label,
    f(p.p50Ms, 2),
    f(p.p99Ms, 2),
    f(p.meanMs, 2),
    f(p.headP50Ms, 2),
    f(p.tailP50Ms, 2),
    String(p.errors),
    f(p.cpuUsPerRequest, 0),
  ];
  const overChain = r.gateway.p50Ms - r.chain.p50Ms;
  return [
    `Latency: ${r.rounds} rounds, one request per path each (the order turning), a new connection per request, a 2 KiB page`,
    "",
    table(
      ["path", "p50 ms", "p99 ms", "mean ms", "head p50 ms", "head → end p50 ms", "errors", "proxy process CPU µs/req"],
      [row(r.direct), row(r.chain), row(r.gateway)],
    ),
    "",
    table(
      ["added", "p50 ms", "p99 ms"],
      [
        ["proxy-chain alone over tinyproxy directly", signed(r.chain.p50Ms - r.direct.p50Ms, 2), signed(r.chain.p99Ms - r.direct.p99Ms, 2)],
        ["gateway over tinyproxy directly", signed(r.gateway.p50Ms - r.direct.p50Ms, 2), signed(r.gateway.p99Ms - r.direct.p99Ms, 2)],
        ["gateway over proxy-chain alone", signed(overChain, 2), signed(r.gateway.p99Ms - r.chain.p99Ms, 2)],
      ],
    ),
    "",
    `Goal ≤ 1 ms p50 over proxy-chain alone: ${overChain <= 1 ? "met" : "missed"} (${signed(overChain, 2)} ms; median of the per-round differences ${signed(r.pairedMedianMs, 2)} ms).`,
    `Where it goes (p50s, gateway − proxy-chain): before the head ${signed(r.gateway.headP50Ms - r.chain.headP50Ms, 2)} ms (the gateway takes its lease before it forwards: one kept from the round before when the pair is unpaced, as here), head → end ${signed(r.gateway.tailP50Ms - r.chain.tailP50Ms, 2)} ms (the release comes before the end is sent, which a Content-Length page does not wait for).`,
    `A lease alone, the SDK in the bench process (${r.sdk.cycles} cycles): acquire p50 ${f(r.sdk.acquireP50Ms, 2)} ms (p99 ${f(r.sdk.acquireP99Ms, 2)}), release p50 ${f(r.sdk.releaseP50Ms, 2)} ms; the broker's own acquire ${f(r.brokerAcquireMeanMs, 2)} ms mean (proxybroker_acquire_seconds, during the rounds).`,
  ].join("\n");
}

function throughputText(rows: readonly ThroughputRow[], clients: number, keepAlive: boolean): string {
  const notOk = (r: ThroughputRow): string =>
    Object.entries(r.notOk)
      .map(([k, v]) => `${v} × ${k}`)
      .join(", ") || "0";
  return [
    `Throughput: ${clients} concurrent clients, ${keepAlive ? "keep-alive" : "a new connection per request"}; cores = CPU seconds per second in the window; others' = the machine's busy cores minus the processes listed`,
    "",
    table(
      [
        "path",
        "req/s",
        "p50 ms",
        "p99 ms",
        "not 200",
        "proxy process cores",
        "proxy process CPU µs/req",
        "broker cores",
        "redis cores",
        "tinyproxies cores",
        "bench cores",
        "machine busy cores",
        "others' cores",
      ],
      rows.map((r) => [
        r.label,
        f(r.requestsPerSec, 0),
        f(r.p50Ms, 1),
        f(r.p99Ms, 1),
        notOk(r),
        f(r.cores.proxy, 2),
        f(r.proxyCpuUsPerRequest, 0),
        f(r.cores.broker, 2),
        f(r.cores.redis, 2),
        f(r.cores.tinyproxies, 2),
        f(r.cores.bench, 2),
        f(r.cores.machine, 2),
        f(
          r.cores.machine -
            [r.cores.proxy, r.cores.broker, r.cores.redis, r.cores.tinyproxies, r.cores.bench]
              .filter(Number.isFinite)
              .reduce((a, b) => a + b, 0),
          2,
        ),
      ]),
    ),
    "",
    ratioText(rows),
  ].join("\n");
}

/** The gateway's req/s over proxy-chain alone's, round by round, and the gateway without kept leases. */
function ratioText(rows: readonly ThroughputRow[]): string {
  const chains = rows.filter((r) => r.label.startsWith("proxy-chain alone"));
  const gateways = rows.filter((r) => r.label.startsWith("gateway → "));
  const ratios = chains.map((c, i) => (gateways[i]?.requestsPerSec ?? Number.NaN) / c.requestsPerSec);
  const sorted = [...ratios].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  // an even count: the mean of the two middle rounds
  const median = Number.isInteger(mid)
    ? ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2
    : (sorted[Math.floor(mid)] ?? Number.NaN);
  const notKept = rows.find((r) => r.label === "gateway, leases not kept");
  const lastChain = chains.at(-1);
  const without =
    notKept === undefined || lastChain === undefined
      ? ""
      : ` Leases not kept (GATEWAY_KEEP_IDLE_MS=0, run last): ${f(notKept.requestsPerSec, 0)} req/s, ${f(notKept.requestsPerSec / lastChain.requestsPerSec, 2)}× the last round's proxy-chain.`;
  return `Gateway over proxy-chain alone, round by round: ${ratios.map((x) => `${f(x, 2)}×`).join(", ")} (median ${f(median, 2)}×; goal ≥ 0.8×).${without}`;
}

function tunnelsText(t: TunnelsResult): string {
  const perTunnel = (t.rssOpen - t.rssIdle) / Math.max(1, t.opened) / 1024;
  return [
    `Tunnels: ${t.wanted} CONNECT tunnels held open at once (tunnel mode, a lease each)`,
    "",
    table(
      ["figure", "value"],
      [
        ["tunnels open / failed", `${t.opened} / ${t.failed}${t.firstFailure === undefined ? "" : ` (first: ${t.firstFailure})`}`],
        [
          "time to open them all (50 at a time)",
          `${f(t.openSeconds, 1)} s (each p50 ${f(t.openP50Ms, 1)} ms, p99 ${f(t.openP99Ms, 1)} ms)`,
        ],
        ["broker's live leases with all open / after they closed", `${t.brokerLiveLeases} / ${t.brokerLiveLeasesAfterClose}`],
        ["tunnels that echoed again with all open", String(t.echoedAgain)],
        ["gateway RSS idle", `${mb(t.rssIdle)} MiB`],
        ["gateway RSS with all open", `${mb(t.rssOpen)} MiB (${signed(perTunnel, 1)} KiB per tunnel)`],
        ["gateway RSS after they closed", `${mb(t.rssAfterClose)} MiB`],
      ],
    ),
  ].join("\n");
}

function downloadText(d: DownloadResult): string {
  const expected = d.seconds / (d.ttlMs / 3 / 1_000);
  const probes =
    Object.entries(d.probes)
      .map(([k, v]) => `${v} × ${k}`)
      .join(", ") || "none";
  return [
    `Download: ${mb(d.bytes)} MiB through the gateway, lease TTL ${d.ttlMs} ms (the download host's domain policy)`,
    "",
    table(
      ["figure", "value"],
      [
        ["received / status", `${d.received} bytes${d.received === d.bytes ? " (all)" : ` of ${d.bytes}`} / ${d.status}`],
        ["duration / rate", `${f(d.seconds, 1)} s / ${f(d.bytes / 2 ** 20 / d.seconds, 0)} MiB/s`],
        ["gateway RSS before", `${mb(d.rssBefore)} MiB`],
        [
          "gateway RSS peak (sampled every 100 ms)",
          `${mb(d.rssPeak)} MiB (${signed((d.rssPeak - d.rssBefore) / 2 ** 20, 1)} MiB, ${d.rssSamples} samples)`,
        ],
        ["gateway RSS peak in each quarter of the time", `${d.rssByQuarter.map((b) => mb(b)).join(" / ")} MiB`],
        ["gateway RSS after", `${mb(d.rssAfter)} MiB`],
        ["broker renewals during it", `${d.renewals} (heartbeats every TTL/3: about ${f(expected, 0)} expected)`],
        ["broker lost leases during it", String(d.lost)],
        ["probes for the same host, no wait", probes],
      ],
    ),
  ].join("\n");
}

function poolsText(p: PoolsResult): string {
  const statuses =
    Object.entries(p.statuses)
      .map(([k, v]) => `${v} × ${k === "0" ? "no answer" : k}`)
      .join(", ") || "none";
  return [
    `Pools: ${p.names} distinct pool names, one request each (20 at a time), against one gateway (GATEWAY_MAX_POOLS default)`,
    "",
    table(
      ["figure", "value"],
      [
        ["answers", `${statuses} (in ${f(p.floodSeconds, 1)} s)`],
        ["gateway RSS idle", `${mb(p.rssIdle)} MiB`],
        ["gateway RSS right after the flood", `${mb(p.rssAfterFlood)} MiB (${signed((p.rssAfterFlood - p.rssIdle) / 2 ** 20, 1)} MiB)`],
        ["gateway RSS 5 s later", `${mb(p.rssSettled)} MiB`],
        ["gateway CPU in those 5 s", `${f(p.idleCores * 100, 1)} % of a core`],
        ["a request in the gateway's own pool afterwards", String(p.ownPoolStatus)],
      ],
    ),
  ].join("\n");
}

/** Every phase's table that ran. */
export function gatewayReport(r: GatewayBenchResults, opts: { clients: number; keepAlive: boolean }): string {
  const parts: string[] = [];
  if (r.latency !== undefined) parts.push(latencyText(r.latency));
  if (r.throughput !== undefined) parts.push(throughputText(r.throughput, opts.clients, opts.keepAlive));
  if (r.tunnels !== undefined) parts.push(tunnelsText(r.tunnels));
  if (r.download !== undefined) parts.push(downloadText(r.download));
  if (r.pools !== undefined) parts.push(poolsText(r.pools));
  return parts.join("\n\n");
}
