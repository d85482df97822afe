/**
 * ProxyAdmin.CheckProxies: one health-check pass over a pool now (the broker's checker, with
 * its check URL, concurrency and timeout), streaming its progress: a first message with the
 * number of proxies to check, one per proxy checked, and a last one with the totals.
 */
import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import type { ServerWritableStream } from "@grpc/grpc-js";
import { CheckProgressSchema, CheckProxiesResponseSchema } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { CheckProxiesRequest, CheckProxiesResponse } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { callerName } from "../security/auth.js";
import { audit } from "./audit.js";
import type { CheckProgressUpdate } from "../health/pass.js";
import type { BrokerContext } from "./context.js";
import { BrokerError } from "./errors.js";
import { checkPool } from "./validate.js";

function progress(p: CheckProgressUpdate): CheckProxiesResponse {
  return create(CheckProxiesResponseSchema, { progress: create(CheckProgressSchema, { ...p }) });
}

export function checkProxies(ctx: BrokerContext): (call: ServerWritableStream<CheckProxiesRequest, CheckProxiesResponse>) => void {
  return (call) => {
    void (async () => {
      const abort = new AbortController();
      call.once("cancelled", () => abort.abort());
      try {
        const pool = checkPool(call.request.pool);
        if (ctx.healthPass === undefined) {
          throw new BrokerError(
            status.FAILED_PRECONDITION,
            "this broker has no health checker: set HEALTH_CHECK_URL (or HEALTH_CHECK_URLS)",
            {},
            { reason: "NO_HEALTH_CHECKER" },
          );
        }
        const last = await ctx.healthPass(pool, (p) => call.write(progress(p)), abort.signal);
        call.write(progress({ ...last, proxyId: "", result: "" }));
        await audit(ctx, {
          actor: callerName(call),
          method: "CheckProxies",
          pool,
          detail: `${last.checked} checked: ${last.passed} passed, ${last.failed} failed, ${last.errors} errors`,
        });
        call.end();
      } catch (err) {
        call.emit("error", BrokerError.from(err).toServiceError());
      }
    })();
  };
}
