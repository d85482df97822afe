/**
 * The sources of a pool as the status page lists them (docs/spec.md §11): the URL as
 * redactSourceUrl shows it (no userinfo, fragment or query values; token-like path segments as
 * `***`), the last refresh and what it did. Never a header.
 */
import type { StoreSources } from "@proxybroker/sdk/engine";
import { redactSourceUrl } from "../../security/redact.js";

export interface SourceRow {
  readonly id: string;
  readonly url: string;
  readonly intervalMs: number;
  readonly lastRefreshAt: number;
  readonly lastSuccessAt: number;
  /** ok, fetch_error, malformed or shrink ("" before the first refresh). */
  readonly result: string;
  readonly error: string;
  readonly listed: number;
  readonly added: number;
  readonly removed: number;
}

export async function sourceRows(store: StoreSources, pool: string): Promise<SourceRow[]> {
  return (await store.listSources(pool)).map((s) => ({
    id: s.id,
    url: redactSourceUrl(s.url),
    intervalMs: s.intervalMs,
    lastRefreshAt: s.status.lastRefreshAt,
    lastSuccessAt: s.status.lastSuccessAt,
    result: s.status.result,
    error: s.status.error,
    listed: s.status.listed,
    added: s.status.added,
    removed: s.status.removed,
  }));
}
