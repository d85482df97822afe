/**
 * ProxyAdmin.WatchEvents: the pool's event stream as it grows (read with a blocking read of a
 * second at a time), and with `grants` the leases this broker grants. The call runs until the
 * client cancels it; while the store is away it waits and reads on from where it was. Watchers
 * are bounded (each holds a store connection).
 */
import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import type { ServerWritableStream } from "@grpc/grpc-js";
import { timestampOf } from "@proxybroker/sdk/wire";
import type { PoolEvent as StoreEvent } from "@proxybroker/sdk/model";
import { PoolEventKind, PoolEventSchema, WatchEventsResponseSchema } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { PoolEvent, WatchEventsRequest, WatchEventsResponse } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { BrokerError } from "./errors.js";
import type { BrokerContext } from "./context.js";
import { checkPool } from "./validate.js";

/** Concurrent WatchEvents calls per broker. */
export const MAX_WATCHERS = 16;
const READ_BLOCK_MS = 1_000;
const RETRY_MS = 1_000;

const KINDS: Readonly<Record<string, PoolEventKind>> = {
  BAN: PoolEventKind.BAN,
  QUARANTINE: PoolEventKind.QUARANTINE,
  BLACKLIST: PoolEventKind.BLACKLIST,
  ADMIN: PoolEventKind.ADMIN,
  POLICY: PoolEventKind.POLICY,
  LEADER: PoolEventKind.LEADER,
  GRANT: PoolEventKind.GRANT,
  COOL_DOWN: PoolEventKind.COOL_DOWN,
  EXIT: PoolEventKind.EXIT,
};

function toWire(pool: string, e: StoreEvent): PoolEvent {
  return create(PoolEventSchema, {
    id: e.id,
    time: timestampOf(e.at),
    kind: KINDS[e.kind] ?? PoolEventKind.UNSPECIFIED,
    pool,
    proxyId: e.proxyId,
    domain: e.domainKey,
    detail: e.detail,
  });
}

export function watchEvents(ctx: BrokerContext): (call: ServerWritableStream<WatchEventsRequest, WatchEventsResponse>) => void {
  let watchers = 0;
  return (call) => {
    let pool: string;
    try {
      pool = checkPool(call.request.pool);
    } catch (err) {
      call.emit("error", BrokerError.from(err).toServiceError());
      return;
    }
    if (ctx.isDraining()) {
      call.emit("error", new BrokerError(status.UNAVAILABLE, "broker is shutting down", {}, { reason: "DRAINING" }).toServiceError());
      return;
    }
    if (watchers >= MAX_WATCHERS) {
      call.emit(
        "error",
        new BrokerError(
          status.RESOURCE_EXHAUSTED,
          `${MAX_WATCHERS} WatchEvents calls already run on this broker`,
          { "retry-after-ms": "10000" },
          { reason: "TOO_MANY_WATCHERS" },
        ).toServiceError(),
      );
      return;
    }
    watchers++;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      watchers--;
      offGrants?.();
    };
    call.once("cancelled", finish);
    call.once("close", finish);
    call.on("error", () => undefined);
    const send = async (event: PoolEvent): Promise<void> => {
      if (done) return;
      if (!call.write(create(WatchEventsResponseSchema, { event })))
        await new Promise<void>((resolve) => call.once("drain", () => resolve()));
    };
    const offGrants = call.request.grants
      ? ctx.grants.on((lease, caller, workerId) => {
          if (lease.pool !== pool) return;
          void send(
            create(PoolEventSchema, {
              time: timestampOf(ctx.clock()),
              kind: PoolEventKind.GRANT,
              pool,
              proxyId: lease.proxy.id,
              domain: lease.domainKey,
              detail: `token ${lease.fencingToken}`,
              actor: caller !== "" ? caller : workerId,
            }),
          );
        })
      : undefined;
    void (async () => {
      let cursor = call.request.after === "" ? "$" : call.request.after;
      while (!done && !ctx.isDraining()) {
        try {
          const r = await ctx.store.readEvents(pool, cursor, { count: 100, blockMs: READ_BLOCK_MS });
          cursor = r.cursor;
          for (const e of r.events) await send(toWire(pool, e));
        } catch {
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      }
      if (!done && ctx.isDraining()) call.end();
    })();
  };
}
