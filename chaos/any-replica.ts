/**
 * The harness's own calls to the broker (end-of-run probes, the isolation group's policies): on
 * the replicas in turn until one answers something other than UNAVAILABLE or no answer in time.
 */
import * as grpc from "@grpc/grpc-js";
import type { Replica } from "./cluster.js";
import { codeOf } from "./workers/replicas.js";

const ATTEMPTS = 5;
const PAUSE_MS = 200;

/** Call `fn` on the replicas in turn until one answers something other than UNAVAILABLE / no answer. */
export async function onAnyReplica<T>(replicas: readonly Replica[], fn: (r: Replica) => Promise<T>): Promise<T> {
  let last: unknown;
  for (let i = 0; i < ATTEMPTS * replicas.length; i++) {
    const r = replicas[i % replicas.length];
    if (r === undefined) break;
    try {
      return await fn(r);
    } catch (err) {
      const code = codeOf(err);
      if (code !== grpc.status.UNAVAILABLE && code !== grpc.status.DEADLINE_EXCEEDED) throw err;
      last = err;
      await new Promise((res) => setTimeout(res, PAUSE_MS));
    }
  }
  throw last instanceof Error ? last : new Error("no replica answered");
}
