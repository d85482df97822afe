/**
 * How the Redis store keeps a worker's fallback claims (docs/spec.md §7) in `P wc:<worker id>`,
 * a string that expires `CLAIM_KEEP_MS` after its last write (invented worker ids cost nothing for
 * long): `<version of the latest>\t<latest as JSON>[\t<the one before as JSON>]`, so that
 * the hearWorker script compares versions and shifts the latest down without parsing JSON. A
 * claim's JSON: `{"v":version,"m":[members],"k":[[domainKey,shareKey,whole 1|0,untilMs],…]}`
 * (JSON escapes tabs: no field can hold one).
 */
import type { ClaimedKey, FallbackClaim } from "@proxybroker/sdk/model";

/**
 * How long a worker's claims are kept after its last claim: longer than twice the longest
 * FALLBACK_WINDOW_MS (a day) — a worker resends its claim before half of its keys' listing has
 * passed, and stays reserved a fallback window after it was last heard.
 */
export const CLAIM_KEEP_MS = 2 * 86_400_000 + 3_600_000;

type KeyRecord = [string, string, number, number];
interface ClaimRecord {
  readonly v: number;
  readonly m: readonly string[];
  readonly k: readonly KeyRecord[];
}

/** One claim as JSON. */
export function encodeClaim(c: FallbackClaim): string {
  const record: ClaimRecord = {
    v: c.version,
    m: c.members,
    k: c.keys.map((k): KeyRecord => [k.domainKey, k.shareKey, k.whole ? 1 : 0, Math.floor(k.untilMs)]),
  };
  return JSON.stringify(record);
}

/** A worker's stored field: the claims, the latest first ("" when none). */
export function encodeClaims(claims: readonly FallbackClaim[]): string {
  const [latest, ...rest] = claims;
  if (latest === undefined) return "";
  return [String(latest.version), encodeClaim(latest), ...rest.slice(0, 1).map(encodeClaim)].join("\t");
}

/** The claims of a stored field, the latest first; anything malformed reads as none. */
export function decodeClaims(raw: string | null | undefined): FallbackClaim[] {
  if (raw === null || raw === undefined || raw === "") return [];
  const out: FallbackClaim[] = [];
  for (const part of raw.split("\t").slice(1)) {
    const c = decodeClaim(part);
    if (c === undefined) return [];
    out.push(c);
  }
  return out;
}

function decodeClaim(json: string): FallbackClaim | undefined {
  try {
    const r = JSON.parse(json) as Partial<ClaimRecord>;
    if (typeof r.v !== "number" || !Array.isArray(r.m) || !Array.isArray(r.k)) return undefined;
    const keys: ClaimedKey[] = r.k.map(([domainKey, shareKey, whole, untilMs]) => ({
      domainKey: String(domainKey),
      shareKey: String(shareKey),
      whole: whole === 1,
      untilMs: Number(untilMs),
    }));
    return { version: r.v, members: r.m.map(String), keys };
  } catch {
    return undefined;
  }
}
