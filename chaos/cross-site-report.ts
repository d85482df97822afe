/**
 * The isolation group's part of the chaos summary (CHAOS_ISOLATION): when the harness set the
 * group's policies, the group's check lines, and the first cross-site overlaps in detail — the IP
 * and its proxy, both sites with their times, the leases of that proxy live on either site then,
 * the faults nearby, and whether the policies were being set again after a FLUSHALL at that time.
 */
import { leasesAt } from "./checker.js";
import type { CrossSiteOverlap, IsolationResult } from "./cross-site.js";
import type { FaultEvent } from "./faults.js";
import type { PolicySetting } from "./isolation-policies.js";
import type { LeaseRecord } from "./records.js";
import { iso, leaseLine } from "./report-lines.js";

/** Cross-site overlaps shown in detail (the count has them all; sites.jsonl every request). */
export const SHOWN = 10;

/** The setting under way at `at`: from what took the policies away to the last answer (undefined: none). */
export function settingUnderWay(settings: readonly PolicySetting[], at: number): PolicySetting | undefined {
  return settings.find((s) => s.lostAt !== undefined && s.lostAt <= at && at <= s.doneAt);
}

/** "isolation policies: group market on 3 sites, set at the start in 4 ms, and again after 3 FLUSHALLs (…)". */
export function policySettingsLine(group: string | undefined, sites: number, settings: readonly PolicySetting[]): string {
  if (group === undefined) return "isolation policies: none (CHAOS_ISOLATION unset)";
  const start = settings.find((s) => s.lostAt === undefined);
  const again = settings.filter((s) => s.lostAt !== undefined);
  const gaps = again.map((s) => s.doneAt - (s.lostAt ?? s.at));
  const startText = start === undefined ? "never set at the start" : `set at the start in ${start.doneAt - start.at} ms`;
  const againText =
    again.length === 0
      ? "no FLUSHALL to set them again after"
      : `set again after ${again.length} FLUSHALL${again.length === 1 ? "" : "s"}, ${again.length === 1 ? "" : "each "}within ${Math.max(...gaps)} ms of it`;
  return `isolation policies: group ${group} on ${sites} sites, ${startText}, ${againText}`;
}

/** The group's lines under "checks:". */
export function isolationCheckLines(r: IsolationResult): string[] {
  const n = r.crossSiteOverlaps.length;
  if (r.group === undefined) return [`  cross-site overlaps (no isolation group: for information, not checked): ${n}`];
  return [
    `  cross-site overlaps (isolation group ${r.group}, ${r.sites.length} sites: one IP inside two sites at once): ${n}`,
    `  isolation policies at the end (ListDomainPolicies: every site's names ${r.group}): ${r.policiesMissing.length} missing`,
  ];
}

export interface CrossSiteFacts {
  readonly isolation: IsolationResult;
  readonly leases: readonly LeaseRecord[];
  readonly proxyOfIp: ReadonlyMap<string, string>;
  readonly faultEvents: readonly FaultEvent[];
  readonly policySettings: readonly PolicySetting[];
  /** Leases without an end count as live this long after their grant (10 TTLs). */
  readonly horizonMs: number;
}

function overlapLines(ov: CrossSiteOverlap, f: CrossSiteFacts): string[] {
  const proxy = f.proxyOfIp.get(ov.ip) ?? `? (${ov.ip})`;
  const domainOf = (site: string): string => site.split(":")[0] ?? site;
  const out = [
    `cross-site overlap from ${ov.ip} (proxy ${proxy}): ${ov.first.site} ${iso(ov.first.start)}–${iso(ov.first.end)} and ${ov.second.site} ${iso(ov.second.start)}–${iso(ov.second.end)} (${Math.min(ov.first.end, ov.second.end) - ov.second.start} ms at once)`,
  ];
  for (const r of [ov.first, ov.second]) {
    for (const l of leasesAt(f.leases, { proxy, domain: domainOf(r.site) }, r.start, f.horizonMs))
      out.push(`    live at ${r.site} ${iso(r.start)}: ${leaseLine(l)}`);
  }
  const unset = settingUnderWay(f.policySettings, ov.second.start);
  if (unset !== undefined)
    out.push(`    policies being set again then: ${unset.why}, lost ${iso(unset.lostAt ?? unset.at)}, set again by ${iso(unset.doneAt)}`);
  const nearby = f.faultEvents.filter((e) => e.at <= ov.second.start + 1_000 && e.backAt >= ov.first.start - 10_000);
  for (const e of nearby) out.push(`    fault nearby: ${e.kind} ${e.target} ${e.detail} at ${iso(e.at)}, back ${iso(e.backAt)}`);
  return out;
}

/** The details of the group's failed checks: the first cross-site overlaps, the policies missing at the end. */
export function isolationDetails(f: CrossSiteFacts): string[] {
  const r = f.isolation;
  if (r.group === undefined) return [];
  const out = r.crossSiteOverlaps.slice(0, SHOWN).flatMap((ov) => overlapLines(ov, f));
  if (r.crossSiteOverlaps.length > SHOWN) out.push(`… and ${r.crossSiteOverlaps.length - SHOWN} more cross-site overlaps`);
  for (const m of r.policiesMissing) out.push(`policy not naming ${r.group} at the end: ${m.domain} (${m.why})`);
  return out;
}
