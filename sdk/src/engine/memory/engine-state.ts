/**
 * Internal to the in-memory engine: the whole store's state — pools by name, the global lease
 * table — with the context every operation uses.
 */
import type { EngineContext } from "./context.js";
import { LeaseTable } from "./lease-table.js";
import { EVENTS_MAX, PoolState } from "./pool-state.js";
import { EventLog } from "./event-log.js";
import type { AuditEntry } from "../../model/model.js";

/** All state of one in-memory store. */
export class EngineState {
  readonly leases = new LeaseTable();
  /** The audit trail of admin calls (capped, as the Redis store's). */
  readonly audit = new EventLog<AuditEntry>(EVENTS_MAX);
  private readonly pools = new Map<string, PoolState>();

  constructor(readonly ctx: EngineContext) {}

  /** The pool with this name, created on demand (for operations that write). */
  pool(name: string): PoolState {
    let pool = this.pools.get(name);
    if (pool === undefined) {
      pool = new PoolState(name);
      this.pools.set(name, pool);
    }
    return pool;
  }

  /** The pool with this name if it exists (for operations that only read). */
  findPool(name: string): PoolState | undefined {
    return this.pools.get(name);
  }
}
