/**
 * One refresh of one source (docs/spec.md §11): fetch its list, read it, and bring the pool in
 * line — listed proxies the pool lacks are added (and owned by the source), owned proxies no longer
 * listed are removed (removal drains: no new grants, live leases run to their end). Proxies the
 * source did not add are never touched. A failed fetch, a malformed answer, or a list that shrank
 * by more than `maxShrink` of the last accepted one changes nothing. Every refresh ends in the
 * source's status; a changed result, or a change of proxies, in the audit trail.
 */
import type { StoreEvents, StoreProxies, StoreSources } from "@proxybroker/sdk/engine";
import type { ProxySpecInput, ProxyView, SourceResult, SourceStatus, SourceView } from "@proxybroker/sdk/model";
import { SourceFetchError, SourceFormatError } from "./errors.js";
import { fetchList } from "./fetch.js";
import type { HeadersReader } from "./headers.js";
import { parseSourceList } from "./parse.js";

export type SourceStore = StoreProxies & StoreSources & StoreEvents;

/** Refresh one source now (what ProxyAdmin.RefreshSource calls). */
export type SourceRefresh = (source: SourceView) => Promise<RefreshOutcome>;

/** What one refresh did. */
export interface RefreshOutcome {
  readonly result: SourceResult;
  /** Why nothing changed ("" when ok). */
  readonly error: string;
  readonly listed: number;
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly ms: number;
}

export interface SourceRefresherOptions {
  readonly store: SourceStore;
  /** The largest part of the last accepted list a new list may lack (0.5 = half). */
  readonly maxShrink: number;
  readonly fetchTimeoutMs: number;
  readonly maxBytes: number;
  /** Reads a source's headers file (inside SOURCE_HEADERS_DIR: `headersReader`). */
  readonly readHeaders: HeadersReader;
  readonly clock?: () => number;
  /** Check newly added proxies now (the health checker); not awaited. */
  readonly probe?: (pool: string, ids: readonly string[]) => Promise<unknown>;
  /** Told of every refresh (metrics, logs). */
  readonly onRefreshed?: (source: SourceView, outcome: RefreshOutcome) => void;
  readonly onError?: (err: unknown) => void;
  /** GET the list (injected in tests); `fetchList` by default. */
  readonly fetchBody?: (url: string, headers: Readonly<Record<string, string>>) => Promise<string>;
}

/** The audit trail's actor for refreshes. */
export const SOURCE_ACTOR = "source-refresh";
/** Store writes per call. */
const CHUNK = 1000;

export class SourceRefresher {
  private readonly clock: () => number;

  constructor(private readonly opts: SourceRefresherOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  async refresh(source: SourceView): Promise<RefreshOutcome> {
    const started = this.clock();
    const listed = await this.listOf(source);
    const outcome = "result" in listed ? { ...listed, ms: this.clock() - started } : await this.apply(source, listed.specs, started);
    await this.record(source, outcome, started);
    return outcome;
  }

  /** The proxies listed, or why the refresh stops here. */
  private async listOf(source: SourceView): Promise<{ specs: ProxySpecInput[] } | Omit<RefreshOutcome, "ms">> {
    const fail = (result: SourceResult, error: string): Omit<RefreshOutcome, "ms"> => ({
      result,
      error,
      listed: 0,
      added: [],
      removed: [],
    });
    let body: string;
    try {
      const headers = await this.opts.readHeaders(source.headersFile);
      body = await (this.opts.fetchBody ?? this.fetchDefault)(source.url, headers);
    } catch (err) {
      if (err instanceof SourceFetchError) return fail("fetch_error", err.message);
      throw err;
    }
    let specs: ProxySpecInput[];
    try {
      specs = parseSourceList(body, source);
    } catch (err) {
      if (err instanceof SourceFormatError) return fail("malformed", err.message);
      throw err;
    }
    const before = source.status.lastSuccessAt > 0 ? source.status.listed : 0;
    if (before > 0 && (before - specs.length) / before > this.opts.maxShrink) {
      const pct = Math.round(this.opts.maxShrink * 100);
      return { ...fail("shrink", `lists ${specs.length} proxies, ${before} before: shrank by more than ${pct} %`), listed: specs.length };
    }
    return { specs };
  }

  private readonly fetchDefault = (url: string, headers: Readonly<Record<string, string>>): Promise<string> =>
    fetchList({ url, headers, timeoutMs: this.opts.fetchTimeoutMs, maxBytes: this.opts.maxBytes });

  private async apply(source: SourceView, specs: readonly ProxySpecInput[], started: number): Promise<RefreshOutcome> {
    const { store } = this.opts;
    const { pool, id } = source;
    const owned = new Set(await store.sourceMembers(pool, id));
    const present = await this.proxiesOf(pool);
    const listed = new Set(specs.map((s) => s.id));
    const fresh = specs.filter((s) => !present.has(s.id));
    const changed = specs.filter((s) => owned.has(s.id) && differs(present.get(s.id), s));
    const gone = [...owned].filter((p) => !listed.has(p));
    // owned before they exist: a refresh cut short never leaves a proxy it added unowned
    if (fresh.length > 0) await store.setSourceMembers(pool, id, [...owned, ...fresh.map((s) => s.id)]);
    const added: string[] = [];
    const writes = [...fresh, ...changed];
    for (let i = 0; i < writes.length; i += CHUNK) added.push(...(await store.addProxies(pool, writes.slice(i, i + CHUNK))).added);
    const removed: string[] = [];
    for (let i = 0; i < gone.length; i += CHUNK) removed.push(...(await store.removeProxies(pool, gone.slice(i, i + CHUNK))).removed);
    const addedSet = new Set(added);
    const keep = specs.map((s) => s.id).filter((p) => owned.has(p) || addedSet.has(p));
    if (fresh.length > 0 || gone.length > 0 || keep.length !== owned.size) await store.setSourceMembers(pool, id, keep);
    if (added.length > 0 && this.opts.probe !== undefined) {
      this.opts.probe(pool, added).catch((err: unknown) => this.opts.onError?.(err));
    }
    return { result: "ok", error: "", listed: specs.length, added, removed, ms: this.clock() - started };
  }

  /** Every proxy of the pool, by id. */
  private async proxiesOf(pool: string): Promise<Map<string, ProxyView>> {
    const out = new Map<string, ProxyView>();
    for (let after = ""; ; ) {
      const page = await this.opts.store.listProxies(pool, { size: 1000, after });
      for (const p of page.proxies) out.set(p.id, p);
      if (page.next === "") return out;
      after = page.next;
    }
  }

  /** The status, the audit trail (a new result or a change), and whoever listens. */
  private async record(source: SourceView, o: RefreshOutcome, at: number): Promise<void> {
    const before = source.status;
    const ok = o.result === "ok";
    const status: SourceStatus = {
      lastRefreshAt: at,
      lastSuccessAt: ok ? at : before.lastSuccessAt,
      result: o.result,
      error: o.error,
      listed: ok ? o.listed : before.listed,
      added: o.added.length,
      removed: o.removed.length,
    };
    this.opts.onRefreshed?.(source, o);
    await this.opts.store.putSourceStatus(source.pool, source.id, status);
    const news = before.result !== o.result || before.error !== o.error;
    if (!news && o.added.length === 0 && o.removed.length === 0) return;
    const detail = ok
      ? `source ${source.id}: ${o.listed} listed, ${o.added.length} added, ${o.removed.length} removed`
      : `source ${source.id}: ${o.result}: ${o.error}; nothing changed`;
    await this.opts.store.appendAudit({ actor: SOURCE_ACTOR, method: "RefreshSource", pool: source.pool, detail });
  }
}

function differs(p: ProxyView | undefined, s: ProxySpecInput): boolean {
  if (p === undefined) return false;
  return p.url !== s.url || p.tier !== s.tier || JSON.stringify(sorted(p.labels)) !== JSON.stringify(sorted(s.labels));
}

function sorted(labels: Readonly<Record<string, string>>): [string, string][] {
  return Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
