/**
 * The chaos harness (`npm run chaos`, `npm run chaos:short`): proves "never two workers on one
 * proxy for one site, whatever fails" with real parts — redis-server with AOF, two broker
 * replicas, tinyproxies, sites, SDK and raw-stub worker processes — while seeded faults hit them
 * (chaos/faults.ts). At the end the checker (chaos/checker.ts) reads the sites' request log, the
 * workers' lease logs and the broker's final state; exit 1 when a check fails. chaos/README.md.
 */
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { recordsLine } from "../crawl/records-line.js";
import { check, joinLeases } from "./checker.js";
import { startCluster } from "./cluster.js";
import type { Cluster } from "./cluster.js";
import { faultSchedule, FaultInjector } from "./faults.js";
import { listPool, probePairs } from "./final-state.js";
import { GroupPolicies, listPolicies } from "./isolation-policies.js";
import { Fleet } from "./fleet.js";
import { readLeaseLogs, writeSiteLog } from "./logs.js";
import { readOptions } from "./options.js";
import type { ChaosOptions } from "./options.js";
import { failoverRecoveries, holdLines } from "./recovery.js";
import { formatReport, runFailures } from "./report.js";

/** Longest a worker may take to finish its lease and exit after SIGTERM. */
const STOP_GRACE_MS = 20_000;
/** Slack after one TTL before the end-of-run probes (process exit to probe, clocks). */
const PROBE_SLACK_MS = 250;
/** Faults start once every worker was granted a lease, or after this long. */
const WARM_UP_MAX_MS = 15_000;
/** A run with no time limit still ends at this cap (the workers' own endAt). */
const CAP_MS = 6 * 3_600_000;

function say(line: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 23)} chaos: ${line}\n`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}

/** Whether the run should go on: not past its time, not at its lease count. */
function running(o: ChaosOptions, startAt: number, fleet: Fleet, marginMs: number): boolean {
  if (o.durationMs !== undefined && Date.now() >= startAt + o.durationMs - marginMs) return false;
  if (o.leases !== undefined && fleet.grants() >= o.leases) return false;
  return true;
}

async function main(): Promise<number> {
  const wallStart = Date.now();
  const o = readOptions();
  const dir = resolve(o.dir);
  runDir = dir;
  const logDir = join(dir, "workers");
  await mkdir(logDir, { recursive: true });
  say(
    `seed ${o.seed}, ${o.durationMs !== undefined ? `${o.durationMs / 1000} s` : ""}${o.leases !== undefined ? ` until ${o.leases} leases` : ""}, logs in ${dir}`,
  );
  const cluster: Cluster = await startCluster(o);
  say(
    `${cluster.redis.label}, brokers ${cluster.replicas.map((r) => `${r.name} ${r.process.address}`).join(", ")}, ${cluster.proxyIds.length} proxies, sites ${cluster.sites.sites.map((s) => s.host).join(", ")}`,
  );
  let code = 2;
  try {
    // CHAOS_ISOLATION: the brokers loaded PROXIES_FILE before they listened; the policies now,
    // before any worker starts, and again after every FLUSHALL (the injector's afterWipe).
    const policies =
      o.isolation === undefined
        ? undefined
        : new GroupPolicies({ replicas: cluster.replicas, domains: cluster.domains, group: o.isolation });
    if (policies !== undefined) {
      const s = await policies.set("start");
      say(`isolation group ${o.isolation ?? ""}: a policy for each of ${cluster.domains.length} sites (${s.doneAt - s.at} ms)`);
    }
    const startAt = Date.now();
    const fleet = new Fleet({
      logDir,
      sdkWorkers: o.sdkWorkers,
      stubWorkers: o.stubWorkers,
      gatewayWorkers: o.gatewayWorkers,
      ...(cluster.gateway === undefined ? {} : { gateway: cluster.gateway.address }),
      brokers: cluster.replicas.map((r) => r.process.address),
      sites: cluster.sites.sites.map((s) => ({ origin: s.origin })),
      seed: o.seed,
      endAt: startAt + (o.durationMs ?? CAP_MS) + STOP_GRACE_MS,
      worker: {
        concurrency: o.concurrency,
        ttlMs: o.ttlMs,
        maxWaitMs: o.maxWaitMs,
        pagesPerLease: o.pagesPerLease,
        streamShare: o.streamShare,
        streamMs: o.streamMs,
        requestTimeoutMs: 10_000,
        sdkFallback: o.sdkFallback,
        sdkAddress: o.sdkAddress,
      },
    });
    fleet.start();
    const warmUntil = Date.now() + WARM_UP_MAX_MS;
    while (!fleet.allGranting() && Date.now() < warmUntil) await sleep(100);
    say(`workers leasing (${fleet.grants()} leases so far); faults start`);

    const injector = new FaultInjector({
      cluster,
      fleet,
      logFile: join(dir, "faults.jsonl"),
      say,
      ...(policies === undefined
        ? {}
        : {
            afterWipe: async (wipedAt: number) => {
              const s = await policies.set("after FLUSHALL", wipedAt);
              return `isolation policies set again ${s.doneAt - wipedAt} ms after the FLUSHALL was sent`;
            },
          }),
    });
    const progress = setInterval(() => say(`${fleet.grants()} leases, ${cluster.sites.log.length} site requests`), 10_000);
    // Faults until the quiet part before the end; then the run goes on until its end.
    await injector.run(faultSchedule({ seed: o.seed, kinds: o.faults, gapMs: o.faultGapMs, downMs: o.downMs }), () =>
      running(o, startAt, fleet, o.quietMs),
    );
    const lastFaultBack = Math.max(startAt, ...injector.events.map((e) => e.backAt));
    if (o.durationMs !== undefined) await sleep(startAt + o.durationMs - Date.now());
    else await sleep(o.quietMs);
    clearInterval(progress);
    const stopAt = Date.now();
    say(`stopping the workers (${fleet.grants()} leases)`);
    const stopped = await fleet.stop(STOP_GRACE_MS);

    // One TTL after the last worker stopped, nothing may be held any more.
    const probeAt = stopped.lastExitAt + o.ttlMs + PROBE_SLACK_MS;
    await sleep(probeAt - Date.now());
    const probedAfterMs = Date.now() - stopped.lastExitAt;
    const probes = await probePairs({ replicas: cluster.replicas, proxies: cluster.proxyIds, domains: cluster.domains });
    const listed = await listPool(cluster.replicas);
    const policiesAtEnd = o.isolation === undefined ? [] : await listPolicies(cluster.replicas);

    const { lines, unreadable } = await readLeaseLogs(logDir);
    const leases = joinLeases(lines);
    const requests = cluster.sites.log.map((r) => ({ site: r.site, ip: r.ip, start: r.start, end: r.end, answer: r.answer }));
    await writeSiteLog(join(dir, "sites.jsonl"), requests);
    const result = check({
      requests,
      leases,
      expectedProxies: cluster.proxyIds,
      listed,
      probes,
      // every site is in the group; without one, the cross-site count is for information
      isolation: { group: o.isolation, sites: cluster.sites.sites.map((s) => s.host), domains: cluster.domains, policiesAtEnd },
    });
    const recoveries = failoverRecoveries({
      events: injector.events,
      leases,
      holds: cluster.replicas.flatMap((r) => holdLines(r.process.output())),
      endAt: stopAt,
    });
    const facts = {
      options: o,
      wallMs: Date.now() - wallStart,
      workMs: stopAt - startAt,
      leases,
      fallbackSwitches: lines.filter((l) => l.t === "event" && l.event === "mode" && l.value === "fallback").length,
      unreadableLines: unreadable,
      requests,
      faults: injector.counts,
      faultEvents: injector.events,
      failedAcquires: fleet.failures(),
      processesStarted: fleet.processesStarted,
      exits: fleet.exits,
      notStopped: stopped.notStopped,
      probedAfterMs,
      quietForMs: stopAt - lastFaultBack,
      proxyOfIp: cluster.proxyOfIp,
      policySettings: policies?.settings ?? [],
      check: result,
      recoveries,
      logDir: dir,
    };
    const report = formatReport(facts);
    await writeFile(join(dir, "summary.txt"), `${report}\n`);
    await writeFile(
      join(dir, "end-state.json"),
      JSON.stringify(
        { listed, probes, ...(o.isolation === undefined ? {} : { policies: policiesAtEnd, policySettings: policies?.settings ?? [] }) },
        null,
        1,
      ),
    );
    if (o.isolation !== undefined)
      await writeFile(join(dir, "cross-site.jsonl"), result.isolation.crossSiteOverlaps.map((x) => `${JSON.stringify(x)}\n`).join(""));
    for (const r of cluster.replicas) await writeFile(join(dir, `broker-${r.name}.log`), r.process.output());
    if (cluster.gateway !== undefined) await writeFile(join(dir, "gateway.log"), cluster.gateway.output());
    process.stdout.write(`${report}\n`);
    code = runFailures(facts).length === 0 ? 0 : 1;
  } finally {
    await cluster.close().catch((err: unknown) => say(`shutting down: ${String(err)}`));
  }
  return code;
}

// Ctrl-C / SIGTERM: exit, so the exit hooks kill redis-server, the tinyproxies, brokers and workers.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

/** The run's directory, once it is known (everything the run writes goes there). */
let runDir: string | undefined;

/** What the run left in its directory: each file, and each directory with how many files it holds. */
async function recordsIn(dir: string | undefined): Promise<string[]> {
  if (dir === undefined) return [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, e.name);
    if (!e.isDirectory()) out.push(path);
    else out.push(`${path}/ (${(await readdir(path, { recursive: true, withFileTypes: true })).filter((f) => f.isFile()).length} files)`);
  }
  return out;
}

/** Last, whatever the outcome: where the records went. */
async function recordsWritten(): Promise<void> {
  process.stdout.write(`${recordsLine("chaos", await recordsIn(runDir).catch(() => []))}\n`);
}

main().then(
  async (code) => {
    await recordsWritten();
    process.exit(code);
  },
  async (err: unknown) => {
    say(err instanceof Error ? (err.stack ?? err.message) : String(err));
    await recordsWritten();
    process.exit(2);
  },
);
