/**
 * A pool's source (docs/spec.md §11): a URL answering a proxy list, fetched by the health
 * checker's leader every interval. Request headers come from a file on the broker's machine:
 * its path is stored, never its contents.
 */

/** How a source's answer lists its proxies. */
export type SourceFormat = "lines" | "json";

/** A source as stored. */
export interface SourceSpec {
  /** Short stable id: a hash of pool and URL. */
  readonly id: string;
  readonly pool: string;
  readonly url: string;
  readonly format: SourceFormat;
  /** For `json`: a dotted path to the array ("" = the answer is the array); `a.b[].url` picks a field of objects. */
  readonly jsonPath: string;
  /** A file of `Name: value` lines on the broker's machine ("" = none). */
  readonly headersFile: string;
  readonly intervalMs: number;
  /** Tier and labels of the proxies it adds. */
  readonly tier: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly createdAt: number;
}

/** How a source's refresh ended. */
export type SourceResult = "ok" | "fetch_error" | "malformed" | "shrink";

/** A source's last refresh (all zero / "" before the first). */
export interface SourceStatus {
  readonly lastRefreshAt: number;
  readonly lastSuccessAt: number;
  readonly result: SourceResult | "";
  /** Why the last refresh changed nothing ("" when it succeeded). */
  readonly error: string;
  /** Proxies in the last list accepted. */
  readonly listed: number;
  readonly added: number;
  readonly removed: number;
}

export const NO_SOURCE_STATUS: SourceStatus = {
  lastRefreshAt: 0,
  lastSuccessAt: 0,
  result: "",
  error: "",
  listed: 0,
  added: 0,
  removed: 0,
};

/** A source with its last refresh. */
export interface SourceView extends SourceSpec {
  readonly status: SourceStatus;
}
