/**
 * Error mapping of the Redis store: backend failures become `StoreUnavailableError`; the
 * negative status codes of the Lua scripts form one enum.
 */
import type { LostReasonName } from "@proxybroker/sdk/model";
import { StoreUnavailableError } from "@proxybroker/sdk/engine";

/** Status codes the scripts answer with (first element of a reply); negative = not done. */
export enum ScriptCode {
  Ok = 1,
  LeaseNotFound = -1,
  LeaseRevoked = -2,
  LeaseExpired = -3,
  StalePolicy = -4,
  NoProxyAvailable = -5,
  ProxyNotFound = -6,
  StaleTerm = -7,
}

/** The lost reason of a lease code, undefined for codes that are not one. */
export function lostReason(code: number): LostReasonName | undefined {
  switch (code) {
    case ScriptCode.LeaseNotFound:
      return "NOT_FOUND";
    case ScriptCode.LeaseRevoked:
      return "REVOKED";
    case ScriptCode.LeaseExpired:
      return "EXPIRED";
    default:
      return undefined;
  }
}

/** A script answered something the decoder does not understand (a bug, not an outage). */
export class ScriptReplyError extends Error {
  override readonly name = "ScriptReplyError";
}

/**
 * Redis error replies that mean "the server cannot serve now" rather than "this script is
 * wrong": loading, busy with a script, cluster or replica trouble, read-only replica, out of
 * memory.
 */
const UNAVAILABLE_REPLIES = /^(LOADING|BUSY|CLUSTERDOWN|MASTERDOWN|READONLY|TRYAGAIN|NOREPLICAS|OOM|MOVED|ASK)\b/;

/**
 * Map an error thrown by an ioredis call. Connection failures, closed connections, command
 * timeouts, the offline queue being off, retries exhausted and cluster failures (every error
 * that is not a Redis error reply) become `StoreUnavailableError`, as do error replies of an
 * unavailable server. Other error replies (a script bug) are returned unchanged.
 */
export function toStoreError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError) return err;
  if (!(err instanceof Error)) return new StoreUnavailableError(`redis call failed: ${String(err)}`, { cause: err });
  if (err.name === "ReplyError" && !UNAVAILABLE_REPLIES.test(err.message)) return err;
  return new StoreUnavailableError(`redis unavailable: ${err.message}`, { cause: err });
}
