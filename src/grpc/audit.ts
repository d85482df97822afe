/**
 * The audit trail of admin calls: every ProxyAdmin call that changes something is appended (its
 * caller's token name, the method, the pool, what it did) to a capped stream in the store, and the
 * actions on proxies and policies also go to the pool's event stream. A store that cannot be
 * reached for the audit does not fail the call that already happened.
 */
import type { BrokerContext } from "./context.js";

export interface AuditRecord {
  readonly actor: string;
  readonly method: string;
  readonly pool: string;
  readonly detail: string;
}

/** Record an admin call (best effort: it happened already). */
export async function audit(
  ctx: BrokerContext,
  rec: AuditRecord,
  events: readonly { kind: "ADMIN" | "POLICY"; proxyId: string; domainKey: string; detail: string }[] = [],
): Promise<void> {
  try {
    await ctx.store.appendAudit(rec);
    for (const e of events) await ctx.store.appendEvent(rec.pool, e);
  } catch {
    ctx.metrics.storeErrors.inc();
  }
}
