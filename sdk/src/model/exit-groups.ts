/**
 * Exit groups of a fallback pool (G9, store-semantics §exit IPs, "Fallback pools"): proxies that
 * leave from one exit IP are one IP to a site, so they are cut into shares together — a worker's
 * rendezvous share takes whole groups — and a local lease of one member holds the group.
 *
 * A proxy with no known exit, or alone on its exit, is a group of its own whose key is its id:
 * its rendezvous weight, and so its owner, is exactly the one it had before exits were known.
 * A group of two members or more is keyed `exit:<ip>` (no proxy id has that form: a port is a number).
 */
import { shareOf } from "./rendezvous.js";

/** A proxy as grouping reads it. */
export interface ExitMember {
  readonly id: string;
  /** "" = not known: the proxy is a group of its own. */
  readonly exitIp: string;
}

/** A proxy of a share: an id alone (a group of its own), or with its exit. */
export type ShareMember = string | ExitMember;

/** The key of the group of the proxies that share `exitIp`. */
export function exitGroupKey(exitIp: string): string {
  return `exit:${exitIp}`;
}

function memberOf(m: ShareMember): ExitMember {
  return typeof m === "string" ? { id: m, exitIp: "" } : m;
}

/**
 * The groups of `members`: group key → member ids, in input order (duplicate ids kept once, with
 * their first exit); a group's key is the id of its only member, or `exit:<ip>`.
 */
export function exitGroups(members: readonly ShareMember[]): Map<string, string[]> {
  const byExit = new Map<string, string[]>();
  const order: Array<{ readonly id: string; readonly exitIp: string }> = [];
  const seen = new Set<string>();
  for (const raw of members) {
    const m = memberOf(raw);
    if (seen.has(m.id)) continue;
    seen.add(m.id);
    order.push(m);
    if (m.exitIp === "") continue;
    const ids = byExit.get(m.exitIp);
    if (ids === undefined) byExit.set(m.exitIp, [m.id]);
    else ids.push(m.id);
  }
  const groups = new Map<string, string[]>();
  for (const m of order) {
    const shared = m.exitIp === "" ? undefined : byExit.get(m.exitIp);
    if (shared === undefined || shared.length < 2) groups.set(m.id, [m.id]);
    else if (!groups.has(exitGroupKey(m.exitIp))) groups.set(exitGroupKey(m.exitIp), shared);
  }
  return groups;
}

/** Proxy id → its group's key. */
export function groupKeys(members: readonly ShareMember[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, ids] of exitGroups(members)) for (const id of ids) out.set(id, key);
  return out;
}

/**
 * The proxies of `members` in the rendezvous share of `self` among `workers ∪ {self}`, cut per
 * exit group (every member of a group goes to the owner of its key), in the order of the groups'
 * first members. With no two proxies on one exit it is exactly `shareOf` of the ids.
 */
export function shareOfGroups(members: readonly ShareMember[], workers: readonly string[], self: string): string[] {
  const groups = exitGroups(members);
  return shareOf([...groups.keys()], workers, self).flatMap((key) => groups.get(key) ?? []);
}
