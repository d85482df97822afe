/** The isolation group of `proxybroker policy set` (flags) and `policy list` (a column, JSON fields). */
import type { Command } from "commander";
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { DomainPolicy } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { msOf } from "@proxybroker/sdk/wire";
import { durationFlag } from "./duration-flag.js";
import { formatMs } from "./format.js";

/** The flags as commander hands them over. */
export interface IsolationFlags {
  readonly isolationGroup?: string;
  readonly affinity?: string;
}

/** The policy's isolation fields of a SetDomainPolicy request; the broker checks them. */
export interface IsolationFields {
  readonly isolationGroup?: string;
  readonly affinityWindow?: Duration;
}

/** Add the flags to `policy set`. */
export function isolationOptions(c: Command): Command {
  return c
    .option("--isolation-group <name>", "domain-keys naming the same isolation group never hold one proxy at the same time")
    .option("--affinity <duration>", "a proxy moves to another key of the isolation group only this long after its last lease ended");
}

/** The isolation fields from the flags (none when not given). Throws CliExit on a bad --affinity. */
export function isolationOf(o: IsolationFlags): IsolationFields {
  const affinity = durationFlag("affinity", o.affinity);
  return {
    ...(o.isolationGroup === undefined ? {} : { isolationGroup: o.isolationGroup }),
    ...(affinity === undefined ? {} : { affinityWindow: affinity }),
  };
}

/** One cell for `policy list`: "marketplaces", "marketplaces/10m", "-" for none. */
export function describeIsolation(p: DomainPolicy): string {
  if (p.isolationGroup === "") return "-";
  const ms = msOf(p.affinityWindow);
  return ms > 0 ? `${p.isolationGroup}/${formatMs(ms)}` : p.isolationGroup;
}

/** The fields of `policy list --json`. */
export function isolationJson(p: DomainPolicy): { isolationGroup: string; affinityWindowMs: number } {
  return { isolationGroup: p.isolationGroup, affinityWindowMs: msOf(p.affinityWindow) };
}
