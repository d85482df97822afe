/**
 * The isolation group of a crawl (CRAWL_ISOLATION, CRAWL_AFFINITY_MS): read from the environment,
 * and the fields it adds to the domain policy of every site that gets one (ProxyBroker's
 * strategies; the baselines have no such notion).
 */
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { Duration } from "@bufbuild/protobuf/wkt";

export interface IsolationOptions {
  /** The policies' `isolation_group`. */
  readonly group: string;
  /** The policies' `affinity_window`, ms (0: unset, a proxy may move at once). */
  readonly affinityMs: number;
}

/** CRAWL_ISOLATION (unset or empty: none) and CRAWL_AFFINITY_MS (default 0). */
export function readIsolation(env: NodeJS.ProcessEnv = process.env): IsolationOptions | undefined {
  const group = (env["CRAWL_ISOLATION"] ?? "").trim();
  const raw = env["CRAWL_AFFINITY_MS"] ?? "";
  const affinityMs = raw === "" ? 0 : Number(raw);
  if (!Number.isInteger(affinityMs) || affinityMs < 0) throw new Error(`CRAWL_AFFINITY_MS must be an integer ≥ 0, got "${raw}"`);
  if (group === "") {
    if (affinityMs > 0) throw new Error("CRAWL_AFFINITY_MS needs CRAWL_ISOLATION (an affinity window belongs to an isolation group)");
    return undefined;
  }
  return { group, affinityMs };
}

/** The group's fields of a wire `DomainPolicy`. */
export interface IsolationPolicyFields {
  readonly isolationGroup?: string;
  readonly affinityWindow?: Duration;
}

/** The wire policy fields of the group (spread into `DomainPolicy`); none without a group. */
export function isolationPolicyFields(iso: IsolationOptions | undefined): IsolationPolicyFields {
  if (iso === undefined) return {};
  return { isolationGroup: iso.group, ...(iso.affinityMs > 0 ? { affinityWindow: durationFromMs(iso.affinityMs) } : {}) };
}

/** "isolation group marketplaces, affinity window 2000 ms" (empty without a group). */
export function describeIsolation(iso: IsolationOptions | undefined): string {
  if (iso === undefined) return "";
  return `isolation group ${iso.group}${iso.affinityMs > 0 ? `, affinity window ${iso.affinityMs} ms` : ", no affinity window"}`;
}
