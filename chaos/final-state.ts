/**
 * What the broker says at the end of a run, for the checker: the pool as `ProxyAdmin.ListProxies`
 * lists it, and one acquire of every (proxy, domain-key) pair by proxy id (`max_wait` 0, released
 * at once as ABANDONED, which changes no score) — a pair still held, paced or reserved is denied.
 */
import * as grpc from "@grpc/grpc-js";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { OutcomeKind, ProxyState } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { ListedProxy, PairProbe } from "./checker.js";
import { onAnyReplica } from "./any-replica.js";
import type { Replica } from "./cluster.js";
import { codeOf, trailerOf } from "./workers/replicas.js";

/** The worker id of the end-of-run probes. */
export const CHECKER_WORKER = "chaos-checker";

/** Every proxy of the pool with its state. */
export async function listPool(replicas: readonly Replica[], pool = "default"): Promise<ListedProxy[]> {
  const out: ListedProxy[] = [];
  for (let token = ""; ; ) {
    const page = await onAnyReplica(replicas, (r) => r.admin.listProxies({ pool, pageSize: 1000, pageToken: token }, { deadline: 3_000 }));
    for (const p of page.proxies) out.push({ id: p.id, state: ProxyState[p.state] });
    if (page.nextPageToken === "") return out;
    token = page.nextPageToken;
  }
}

/** Acquire (and release at once) every (proxy, domain-key) pair by proxy id. */
export async function probePairs(opts: {
  readonly replicas: readonly Replica[];
  readonly proxies: readonly string[];
  readonly domains: readonly string[];
}): Promise<PairProbe[]> {
  const out: PairProbe[] = [];
  for (const proxy of opts.proxies) {
    for (const domain of opts.domains) {
      try {
        const res = await onAnyReplica(opts.replicas, (r) =>
          r.broker.acquireLease(
            { workerId: CHECKER_WORKER, domain, proxyId: proxy, ttl: durationFromMs(1_000), maxWait: durationFromMs(0) },
            { deadline: 3_000 },
          ),
        );
        const lease = res.lease;
        if (lease !== undefined) {
          await onAnyReplica(opts.replicas, (r) =>
            r.broker.releaseLease(
              { leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: { kind: OutcomeKind.ABANDONED } },
              { deadline: 3_000 },
            ),
          ).catch(() => undefined);
        }
        out.push({ proxy, domain, granted: lease !== undefined, detail: lease === undefined ? "granted without a lease" : "" });
      } catch (err) {
        const retry = trailerOf(err, "retry-after-ms");
        const message = err instanceof Error ? err.message : String(err);
        out.push({
          proxy,
          domain,
          granted: false,
          detail: `${grpc.status[codeOf(err)]}${retry !== undefined ? ` retry-after ${retry} ms` : ""}: ${message}`,
        });
      }
    }
  }
  return out;
}
