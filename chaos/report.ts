/**
 * The summary of a chaos run: what ran, leases and pages, each fault count, and each check —
 * then, for every failed check, the first cases in detail (an overlap with the leases that were
 * live on that pair at the time).
 */
import { leasesAt } from "./checker.js";
import type { CheckResult } from "./checker.js";
import { isolationCheckLines, isolationDetails, policySettingsLine } from "./cross-site-report.js";
import type { FaultCounts, FaultEvent } from "./faults.js";
import type { WorkerExit } from "./fleet.js";
import type { PolicySetting } from "./isolation-policies.js";
import { BACK_WITHIN_MS, lateRecoveries } from "./recovery.js";
import type { FailoverRecovery } from "./recovery.js";
import type { ChaosOptions } from "./options.js";
import type { LeaseRecord, SiteRequest } from "./records.js";
import { count, iso, leaseLine, list } from "./report-lines.js";

export interface RunFacts {
  readonly options: ChaosOptions;
  /** Wall time of the whole run, startup to verdict, ms. */
  readonly wallMs: number;
  /** From the first worker start to the stop signal, ms. */
  readonly workMs: number;
  readonly leases: readonly LeaseRecord[];
  /** Times an SDK client switched to its fallback pool (its `mode` events). */
  readonly fallbackSwitches: number;
  readonly unreadableLines: number;
  readonly requests: readonly SiteRequest[];
  readonly faults: FaultCounts;
  readonly faultEvents: readonly FaultEvent[];
  readonly failedAcquires: Readonly<Record<string, number>>;
  readonly processesStarted: number;
  readonly exits: readonly WorkerExit[];
  readonly notStopped: readonly string[];
  /** How long after the last worker stopped the end-of-run probes ran, ms. */
  readonly probedAfterMs: number;
  /** How long after the last fault was over the workers were stopped, ms. */
  readonly quietForMs: number;
  readonly proxyOfIp: ReadonlyMap<string, string>;
  /** When the harness set the isolation group's policies (empty without CHAOS_ISOLATION). */
  readonly policySettings: readonly PolicySetting[];
  readonly check: CheckResult;
  /** How the fleet came back from each Redis failover (none without them). */
  readonly recoveries: readonly FailoverRecovery[];
  readonly logDir: string;
}

/** Worker processes that failed on their own (not killed by the harness). */
export function crashedWorkers(exits: readonly WorkerExit[]): WorkerExit[] {
  return exits.filter((e) => e.killed === undefined && e.code !== 0);
}

/** Every reason the run fails: the checker's, and workers that crashed or did not stop. */
export function runFailures(
  facts: Pick<RunFacts, "check" | "exits" | "notStopped" | "faultEvents"> & Partial<Pick<RunFacts, "recoveries">>,
): string[] {
  const out = [...facts.check.failures];
  const late = lateRecoveries(facts.recoveries ?? []);
  if (late.length > 0)
    out.push(
      `${late.length} Redis failovers after which the fleet was not back at full speed within ${BACK_WITHIN_MS} ms of the hold's end`,
    );
  const crashed = crashedWorkers(facts.exits);
  if (crashed.length > 0) out.push(`${crashed.length} worker processes failed`);
  // a fault whose target did not come back (a broker that failed to start again, a Redis that
  // did not restart) is an outage a fleet would meet, not a fault the run may leave out
  const failed = facts.faultEvents.filter((e) => e.error !== undefined);
  if (failed.length > 0) out.push(`${failed.length} faults whose target did not come back (${list(count(failed, (e) => e.kind))})`);
  if (facts.notStopped.length > 0)
    out.push(`${facts.notStopped.length} worker processes did not stop within the grace (a call that never settled?)`);
  return out;
}

/**
 * What the overlaps had in common, from the leases live on their pair at the second request:
 * an SDK fallback lease among them, broker leases only, or none logged (a worker killed before
 * it wrote its grant, or a request outside any lease).
 */
export function overlapCauses(
  facts: Pick<RunFacts, "leases" | "proxyOfIp" | "options"> & { readonly overlaps: RunFacts["check"]["overlaps"] },
): Map<string, number> {
  const byPair = new Map<string, LeaseRecord[]>();
  for (const l of facts.leases) {
    const key = `${l.proxy} ${l.domain}`;
    const list = byPair.get(key);
    if (list === undefined) byPair.set(key, [l]);
    else list.push(l);
  }
  return count(facts.overlaps, (ov) => {
    const proxy = facts.proxyOfIp.get(ov.ip) ?? "";
    const domain = ov.site.split(":")[0] ?? "";
    const live = leasesAt(byPair.get(`${proxy} ${domain}`) ?? [], { proxy, domain }, ov.second.start, 10 * facts.options.ttlMs);
    if (live.some((l) => l.source === "fallback")) return "an SDK fallback lease involved";
    if (live.length >= 2) return "broker leases only";
    return "fewer than two leases logged";
  });
}

const s1 = (ms: number | undefined): string => (ms === undefined ? "never" : `${(ms / 1000).toFixed(1)} s`);

/** A line per Redis failover: promotion, hold, first broker grant, and when the fleet was back. */
export function recoveryLines(recoveries: readonly FailoverRecovery[]): string[] {
  return recoveries.map(
    (r) =>
      `  failover of ${r.target} at ${iso(r.killedAt)}: replica promoted after ${s1(r.promotedMs)}; ${r.hold === undefined ? "no hold" : `hold noticed after ${s1(r.hold.noticedMs)}, ${s1(r.hold.lengthMs)} long, ending ${s1(r.hold.endMs)} after the kill`}; first broker grant after ${s1(r.firstBrokerGrantMs)}; fleet at ≥ 0.8 × its ${r.baselinePerS.toFixed(0)} leases/s after ${s1(r.fleetBackMs)} (bound ${s1(r.boundMs)}), broker leases at ≥ 0.8 × ${r.brokerBaselinePerS.toFixed(0)}/s after ${s1(r.brokerBackMs)}${r.fleetBackMs === undefined || r.fleetBackMs > r.boundMs ? " — LATE" : ""}`,
  );
}

function redisLine(o: ChaosOptions): string {
  if (o.redis === "sentinel") return `Redis with Sentinel (a master and a replica, AOF ${o.appendfsync}; 3 Sentinels)`;
  if (o.redis === "cluster") return "a Redis Cluster (3 masters, a replica each)";
  return `one redis-server (AOF, appendfsync ${o.appendfsync})`;
}

export function formatReport(facts: RunFacts): string {
  const o = facts.options;
  const { check } = facts;
  const leases = facts.leases;
  const byKind = count(leases, (l) => l.kind);
  const sdk = leases.filter((l) => l.kind === "sdk");
  const handedOver = leases.filter((l) => l.end !== undefined && l.end.finalLease !== l.lease).length;
  const answers = count(facts.requests, (r) => r.answer);
  const pages = leases.reduce((n, l) => n + (l.end?.pages ?? 0), 0);
  const seconds = facts.workMs / 1000;
  const f = facts.faults;
  const crashed = crashedWorkers(facts.exits);
  const failures = runFailures(facts);
  const lines = [
    `chaos: seed ${o.seed}; 2 broker replicas on ${redisLine(o)}; ${o.proxies} tinyproxies × ${o.sites} sites; ${o.sdkWorkers} SDK + ${o.stubWorkers} stub + ${o.gatewayWorkers} gateway worker processes × ${o.concurrency} loops; lease TTL ${o.ttlMs} ms; SDK fallback ${o.sdkFallback ? "on" : "off"}, SDK address ${o.sdkAddress === "all" ? "both replicas" : "one replica"}; faults ${o.faults.length === 0 ? "none" : o.faults.join(", ")}${o.isolation !== undefined ? `; isolation group ${o.isolation} (every site)` : ""}`,
    `time: ${(facts.wallMs / 1000).toFixed(1)} s wall, ${seconds.toFixed(1)} s of work; logs in ${facts.logDir}`,
    "",
    `leases granted: ${leases.length} (${(leases.length / Math.max(seconds, 1e-9)).toFixed(0)}/s) — sdk ${byKind.get("sdk") ?? 0} [${list(count(sdk, (l) => `${l.api}/${l.source}`))}; handed over ${handedOver}], stub ${byKind.get("stub") ?? 0}, gateway ${byKind.get("gateway") ?? 0} [${list(
      count(
        leases.filter((l) => l.kind === "gateway"),
        (l) => l.source,
      ),
    )}]`,
    `lease ends: ${list(count(leases, (l) => l.end?.how ?? "none (worker killed)"))}; SDK clients switched to fallback ${facts.fallbackSwitches} times`,
    `pages: ${pages} taken by workers; the sites saw ${facts.requests.length} requests (${list(answers)})`,
    `failed acquires (retried): ${list(facts.failedAcquires)}`,
    `faults: worker SIGKILL ${f["worker-kill"]}, broker SIGKILL ${f["broker-kill"]}, broker SIGTERM ${f["broker-term"]}, Redis restart ${f["redis-restart"]} (SHUTDOWN NOSAVE ${f["redis-restart-shutdown"]}, SIGKILL ${f["redis-restart-sigkill"]}), Redis FLUSHALL ${f["redis-wipe"]}, Redis failover ${f["redis-failover"]}, gateway SIGKILL ${f["gateway-kill"]}; failed to inject ${facts.faultEvents.filter((e) => e.error !== undefined).length}`,
    policySettingsLine(o.isolation, o.sites, facts.policySettings),
    `worker processes: ${facts.processesStarted} started, ${crashed.length} failed on their own, ${facts.notStopped.length} did not stop in time${facts.unreadableLines > 0 ? `; ${facts.unreadableLines} unreadable log lines` : ""}`,
    "",
    "checks:",
    `  overlaps at the sites (one IP, one site, two requests in flight): ${check.overlaps.length}${check.overlaps.length > 0 ? ` (${list(overlapCauses({ ...facts, overlaps: check.overlaps }))})` : ""}`,
    `  fencing token violations (per proxy and domain, grant order): ${check.tokenViolations.length}${check.tokenViolations.length > 0 ? ` (${list(count(check.tokenViolations, (v) => (v.earlier.source === "fallback" || v.later.source === "fallback" ? "an SDK fallback lease involved" : "broker leases only")))})` : ""}`,
    `  proxies not back in the pool (ListProxies, ACTIVE): ${check.notBack.length}`,
    `  busy leases (pairs not acquirable ${facts.probedAfterMs} ms after the last worker stopped; last fault over ${(facts.quietForMs / 1000).toFixed(1)} s before the stop): ${check.busy.length}`,
    ...isolationCheckLines(check.isolation),
    ...recoveryLines(facts.recoveries),
    "",
    failures.length === 0 ? "result: PASS" : `result: FAIL — ${failures.join("; ")}`,
  ];
  const details: string[] = [];
  for (const ov of check.overlaps.slice(0, 10)) {
    const proxy = facts.proxyOfIp.get(ov.ip) ?? `? (${ov.ip})`;
    const domain = ov.site.split(":")[0] ?? ov.site;
    details.push(
      `overlap at ${ov.site} from ${ov.ip} (proxy ${proxy}): ${ov.first.answer} ${iso(ov.first.start)}–${iso(ov.first.end)} and ${ov.second.answer} ${iso(ov.second.start)}–${iso(ov.second.end)}`,
    );
    for (const l of leasesAt(leases, { proxy, domain }, ov.second.start, 10 * o.ttlMs)) details.push(`    live lease: ${leaseLine(l)}`);
    for (const l of leasesAt(leases, { proxy, domain }, ov.first.start, 10 * o.ttlMs))
      details.push(`    live at the first request: ${leaseLine(l)}`);
    const nearby = facts.faultEvents.filter((e) => e.at <= ov.second.start + 1_000 && e.backAt >= ov.first.start - 10_000);
    for (const e of nearby) details.push(`    fault nearby: ${e.kind} ${e.target} ${e.detail} at ${iso(e.at)}, back ${iso(e.backAt)}`);
  }
  if (check.overlaps.length > 10) details.push(`… and ${check.overlaps.length - 10} more overlaps`);
  details.push(
    ...isolationDetails({
      isolation: check.isolation,
      leases,
      proxyOfIp: facts.proxyOfIp,
      faultEvents: facts.faultEvents,
      policySettings: facts.policySettings,
      horizonMs: 10 * o.ttlMs,
    }),
  );
  for (const v of check.tokenViolations.slice(0, 10)) {
    details.push(
      `token ${v.kind} on ${v.proxy} / ${v.domain}:`,
      `    earlier: ${leaseLine(v.earlier)}`,
      `    later:   ${leaseLine(v.later)}`,
    );
  }
  for (const n of check.notBack) details.push(`proxy not back: ${n.id} (${n.why})`);
  for (const b of check.busy.slice(0, 20)) details.push(`busy: ${b.proxy} / ${b.domain}: ${b.detail}`);
  for (const c of crashed)
    details.push(`worker ${c.workerId}#${c.gen} exited ${String(c.code ?? c.signal)}: ${c.stderr.trim().slice(-1_000)}`);
  for (const e of facts.faultEvents.filter((x) => x.error !== undefined))
    details.push(`fault ${e.kind} ${e.target} failed: ${e.error ?? ""}`);
  return [...lines, ...(details.length > 0 ? ["", "details:", ...details] : [])].join("\n");
}
