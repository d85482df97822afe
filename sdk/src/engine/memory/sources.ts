/** The sources of the memory store (`StoreSources`): per pool, by id. */
import type { SourceSpec, SourceStatus, SourceView } from "../../model/source.js";
import { NO_SOURCE_STATUS } from "../../model/source.js";

interface Entry {
  spec: SourceSpec;
  status: SourceStatus;
  members: string[];
}

export class SourceBook {
  /** `<pool>` → id → entry. */
  private readonly pools = new Map<string, Map<string, Entry>>();

  put(source: SourceSpec): void {
    let pool = this.pools.get(source.pool);
    if (pool === undefined) {
      pool = new Map();
      this.pools.set(source.pool, pool);
    }
    const old = pool.get(source.id);
    pool.set(source.id, {
      spec: { ...source, labels: { ...source.labels } },
      status: old?.status ?? NO_SOURCE_STATUS,
      members: old?.members ?? [],
    });
  }

  list(pool: string): SourceView[] {
    const entries = [...(this.pools.get(pool)?.values() ?? [])];
    entries.sort((a, b) => (a.spec.id < b.spec.id ? -1 : a.spec.id > b.spec.id ? 1 : 0));
    return entries.map((e) => ({ ...e.spec, labels: { ...e.spec.labels }, status: e.status }));
  }

  remove(pool: string, id: string): boolean {
    return this.pools.get(pool)?.delete(id) ?? false;
  }

  setStatus(pool: string, id: string, status: SourceStatus): void {
    const e = this.pools.get(pool)?.get(id);
    if (e !== undefined) e.status = { ...status };
  }

  members(pool: string, id: string): string[] {
    return [...(this.pools.get(pool)?.get(id)?.members ?? [])];
  }

  setMembers(pool: string, id: string, ids: readonly string[]): void {
    const e = this.pools.get(pool)?.get(id);
    if (e !== undefined) e.members = [...ids];
  }
}
