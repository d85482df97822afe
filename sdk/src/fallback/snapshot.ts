import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { storedExpectations } from "../model/expectations.js";
import { storedIsolation } from "../model/isolation.js";
import type { DomainPolicySpec, ProxyStateName, ProxyView } from "../model/model.js";
import type { DomainListing } from "./domain-shares.js";
import type { ClaimedKey, FallbackClaim } from "../model/fallback-claim.js";

/**
 * The pool as the broker last described it (`GetPoolSnapshot`), in plain model types, and its
 * file form: a worker that starts during an outage reads it to build its fallback pool.
 */

/** One pool as the broker saw it at `takenAt` (epoch ms). */
export interface PoolSnapshot {
  readonly pool: string;
  readonly proxies: readonly ProxyView[];
  /** Workers the broker saw recently: the rendezvous set of the fallback shares. */
  readonly liveWorkers: readonly string[];
  readonly policies: readonly DomainPolicySpec[];
  /** Domain-keys whose interval adaptive pacing raised at the broker → that interval (ms). */
  readonly pacing?: Readonly<Record<string, number>>;
  /** The longest lease TTL the broker granted lately (ms). */
  readonly longestTtlMs?: number;
  /** How long after its last contact the broker keeps a silent worker's share reserved (ms). */
  readonly fallbackWindowMs?: number;
  /** Live workers without a fallback pool that keep their leases to the end (raw stubs). */
  readonly workersWithoutFallback?: number;
  /**
   * Worker → the domain-keys the broker listed for it (its fallback shares follow them);
   * absent when the broker lists none.
   */
  readonly domains?: Readonly<Record<string, readonly DomainListing[]>>;
  /** After how long without hearing from a worker the broker counts it silent, and how often it reserves (ms). */
  readonly workerAbsentAfterMs?: number;
  readonly reserveIntervalMs?: number;
  /** The claim the broker acknowledged last (what this worker may use from the pool). */
  readonly claim?: FallbackClaim;
  readonly takenAt: number;
}

/** Writing a snapshot file failed; `cause` holds the I/O error. */
export class SnapshotFileError extends Error {
  override readonly name = "SnapshotFileError";
  readonly code = "SNAPSHOT_WRITE_FAILED";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Bumped when the file layout changes; other versions are ignored on load. */
const FILE_VERSION = 1;

/**
 * Write `snap` to `path` as JSON, atomically: a temp file next to it, then a rename, so a reader
 * sees the old file or the new one, never half of one. The file holds proxy URLs, which may carry
 * credentials, so it is created with mode 0600. Rejects with `SnapshotFileError`.
 */
export async function saveSnapshotFile(path: string, snap: PoolSnapshot): Promise<void> {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(tmp, JSON.stringify({ version: FILE_VERSION, snapshot: snap }), { mode: 0o600 });
    await rename(tmp, path);
  } catch (err: unknown) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw new SnapshotFileError(`cannot write pool snapshot to ${path}`, { cause: err });
  }
}

/** Read a snapshot file; a missing, unreadable, corrupt or foreign file gives undefined. */
export async function loadSnapshotFile(path: string): Promise<PoolSnapshot | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isRecord(parsed) || parsed["version"] !== FILE_VERSION) return undefined;
    const snap = parsed["snapshot"];
    if (!isSnapshot(snap)) return undefined;
    const { domains, claim, ...rest } = snap;
    const listed = asDomains(domains);
    const kept = asClaim(claim);
    return {
      ...rest,
      // files written before exits were known (G9) have none
      proxies: snap.proxies.map((p) => ({ ...p, exitIp: typeof p.exitIp === "string" ? p.exitIp : "" })),
      policies: snap.policies.map(asPolicy).filter((p): p is DomainPolicySpec => p !== undefined),
      ...(listed !== undefined ? { domains: listed } : {}),
      ...(kept !== undefined ? { claim: kept } : {}),
    };
  } catch {
    return undefined;
  }
}

const STATES: ReadonlySet<string> = new Set<ProxyStateName>(["ACTIVE", "QUARANTINED", "BLACKLISTED", "DISABLED"]);
const PROXY_NUMBERS = [
  "score",
  "latencyEwmaMs",
  "successCount",
  "failureCount",
  "lastUsedAt",
  "quarantineUntil",
  "quarantineCount",
] as const;
const POLICY_NUMBERS = ["maxConcurrency", "minIntervalMs", "defaultTtlMs", "banTtlMs"] as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isStrings(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

function isProxy(v: unknown): v is ProxyView {
  if (!isRecord(v)) return false;
  const { id, url, tier, labels, state, lastUsedBy } = v;
  if (typeof id !== "string" || typeof url !== "string" || typeof tier !== "string") return false;
  if (typeof lastUsedBy !== "string" || typeof state !== "string" || !STATES.has(state)) return false;
  if (!isRecord(labels) || !Object.values(labels).every((x) => typeof x === "string")) return false;
  if (v["exitIp"] !== undefined && typeof v["exitIp"] !== "string") return false;
  return PROXY_NUMBERS.every((k) => Number.isFinite(v[k]));
}

/** A policy as written by this or an earlier version (fields added since then get defaults). */
function asPolicy(v: unknown): DomainPolicySpec | undefined {
  if (!isRecord(v) || typeof v["pattern"] !== "string" || typeof v["group"] !== "string") return undefined;
  if (!POLICY_NUMBERS.every((k) => Number.isFinite(v[k]))) return undefined;
  const n = (k: string): number => (typeof v[k] === "number" && Number.isFinite(v[k]) ? v[k] : 0);
  const expectations = storedExpectations(v["expectations"]);
  return {
    pattern: v["pattern"],
    group: v["group"],
    maxConcurrency: n("maxConcurrency"),
    minIntervalMs: n("minIntervalMs"),
    defaultTtlMs: n("defaultTtlMs"),
    banTtlMs: n("banTtlMs"),
    pacing: v["pacing"] === "grant" ? "grant" : "release",
    jitterMs: n("jitterMs"),
    maxIntervalMs: n("maxIntervalMs"),
    fixedInterval: v["fixedInterval"] === true,
    ...(expectations === undefined ? {} : { expectations }),
    ...storedIsolation(v["isolationGroup"], n("affinityWindowMs")),
  };
}

/** The domain listings of a file, when well formed (an earlier version wrote none). */
function asDomains(v: unknown): Record<string, DomainListing[]> | undefined {
  if (!isRecord(v)) return undefined;
  const out: Record<string, DomainListing[]> = {};
  for (const [worker, list] of Object.entries(v)) {
    if (!Array.isArray(list)) return undefined;
    const listings: DomainListing[] = [];
    for (const l of list) {
      if (!isRecord(l) || typeof l["domainKey"] !== "string" || !Number.isFinite(l["listedForMs"]) || !Number.isFinite(l["expiresInMs"]))
        return undefined;
      listings.push({ domainKey: l["domainKey"], listedForMs: Number(l["listedForMs"]), expiresInMs: Number(l["expiresInMs"]) });
    }
    out[worker] = listings;
  }
  return out;
}

/** The claim of a file, when well formed (an earlier version wrote none). */
function asClaim(v: unknown): FallbackClaim | undefined {
  if (!isRecord(v) || !Number.isSafeInteger(v["version"]) || !isStrings(v["members"]) || !Array.isArray(v["keys"])) return undefined;
  const keys: ClaimedKey[] = [];
  for (const k of v["keys"]) {
    if (!isRecord(k) || typeof k["domainKey"] !== "string" || typeof k["shareKey"] !== "string" || typeof k["whole"] !== "boolean")
      return undefined;
    if (!Number.isFinite(k["untilMs"])) return undefined;
    keys.push({ domainKey: k["domainKey"], shareKey: k["shareKey"], whole: k["whole"], untilMs: Number(k["untilMs"]) });
  }
  return { version: Number(v["version"]), members: v["members"], keys };
}

function isPolicy(v: unknown): boolean {
  return asPolicy(v) !== undefined;
}

function isSnapshot(v: unknown): v is PoolSnapshot {
  if (!isRecord(v) || typeof v["pool"] !== "string" || !Number.isFinite(v["takenAt"])) return false;
  const { proxies, policies, liveWorkers } = v;
  return Array.isArray(proxies) && proxies.every(isProxy) && Array.isArray(policies) && policies.every(isPolicy) && isStrings(liveWorkers);
}
