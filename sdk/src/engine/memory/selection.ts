/**
 * Internal to the in-memory engine: choosing a candidate (store-semantics §acquire step pickCandidate) and
 * the matching rules shared with sticky sessions.
 */
import type { AcquireParams } from "../../model/model.js";
import type { DomainState } from "./pool-state.js";
import type { ProxyRecord } from "./records.js";
import type { ScoreIndex } from "./score-index.js";

/** The band is at least this wide (and then 2 more per busy pair of the domain-key). */
export const BAND_MIN = 16;
/** Random probes into the band before the scan. */
export const PROBES = 8;
/** The scan after the probes reads the band in windows of this many entries … */
export const SCAN_WINDOW = 256;
/** … at most this many windows: bands up to SCAN_WINDOW · SCAN_WINDOWS entries are read whole. */
export const SCAN_WINDOWS = 4;

/** Every requested label equals the proxy's label. */
export function labelsMatch(proxy: Readonly<Record<string, string>>, wanted: Readonly<Record<string, string>>): boolean {
  for (const key in wanted) {
    if (!Object.hasOwn(proxy, key) || proxy[key] !== wanted[key]) return false;
  }
  return true;
}

/** The proxy is of the requested tier ("" = any) and has the requested labels. */
export function matchesRequest(rec: ProxyRecord, params: AcquireParams): boolean {
  return (params.tier === "" || rec.tier === params.tier) && labelsMatch(rec.labels, params.labels);
}

/** A uniform position in [0, n). */
function pick(random: () => number, n: number): number {
  return Math.min(n - 1, Math.floor(random() * n));
}

/** What `choose` looks at. */
export interface ChoiceInput {
  /** The candidate index: the smallest of those the request's tier and labels allow. */
  readonly candidates: ScoreIndex<ProxyRecord>;
  readonly domain: DomainState;
  readonly random: () => number;
  /** Whether a candidate may be granted now. */
  readonly eligible: (rec: ProxyRecord) => boolean;
  /**
   * Proxies that may be held back by what the domain-key's busy index does not show (the holds
   * of other domain-keys of its isolation groups, G8): the band widens by 2 per each, as per busy
   * pair. Default 0.
   */
  readonly heldBack?: number;
}

/**
 * The band is the top BAND_MIN + 2 · (busy pairs of the domain-key + `heldBack`) candidates.
 * The first eligible candidate among up to PROBES random positions of the top band, then a scan
 * of the band from a random start, wrapping, in up to SCAN_WINDOWS windows of SCAN_WINDOW
 * entries (a band that small is read whole, so a denial then means none is eligible);
 * undefined when none. Candidates are ACTIVE by construction (the indexes hold only ACTIVE
 * proxies); `eligible` checks the rest (the tier and every label, since the index guarantees
 * only one of them, and the pair). The Redis script reads the same positions, window by window.
 */
export function choose(input: ChoiceInput): ProxyRecord | undefined {
  const { candidates, domain, random, eligible } = input;
  const band = Math.min(candidates.size, BAND_MIN + 2 * (domain.busy.size + (input.heldBack ?? 0)));
  if (band === 0) return undefined;
  for (let probe = 0; probe < PROBES; probe++) {
    const rec = candidates.at(pick(random, band))!;
    if (eligible(rec)) return rec;
  }
  const start = pick(random, band);
  const limit = Math.min(band, SCAN_WINDOW * SCAN_WINDOWS);
  for (let i = 0; i < limit; i++) {
    const rec = candidates.at((start + i) % band)!;
    if (eligible(rec)) return rec;
  }
  return undefined;
}
