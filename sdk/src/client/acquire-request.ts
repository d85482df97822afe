import { hostFromDomain, hostFromUrl } from "../model/domain-key.js";
import type { AcquireOptions } from "./acquire-options.js";
import type { AcquireRequest } from "./broker-backend.js";
import { InvalidArgumentError } from "./errors.js";

/** What every acquire of a client carries. */
export interface RequestBase {
  readonly workerId: string;
  readonly pool: string;
  /** The client's `ttlMs` (0: the broker's default for the domain). */
  readonly ttlMs: number;
}

/**
 * The request of an acquire of `target` (a URL, or a host). Checked here, so that bad input fails
 * the same way in both modes: throws `InvalidArgumentError` for a target that is neither an
 * http(s) URL nor a host, and for a negative `maxWaitMs` or `ttlMs`.
 */
export function acquireRequest(base: RequestBase, target: string, o: AcquireOptions): AcquireRequest {
  const isUrl = target.includes("://");
  try {
    if (isUrl) hostFromUrl(target);
    else hostFromDomain(target);
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err), { cause: err });
  }
  const maxWaitMs = o.maxWaitMs ?? 0;
  if (!(maxWaitMs >= 0)) throw new InvalidArgumentError(`maxWaitMs must be ≥ 0, got ${String(o.maxWaitMs)}`);
  const ttlMs = o.ttlMs ?? base.ttlMs;
  if (!(ttlMs >= 0)) throw new InvalidArgumentError(`ttlMs must be ≥ 0, got ${String(o.ttlMs)}`);
  return {
    workerId: base.workerId,
    pool: base.pool,
    targetUrl: isUrl ? target : "",
    domain: isUrl ? "" : target,
    ttlMs,
    maxWaitMs,
    sessionKey: o.sessionKey ?? "",
    tier: o.tier ?? "",
    labels: o.labels ?? {},
    proxyId: "",
    ...(o.reuse === true ? { reuse: true } : {}),
  };
}

/** The shortest TTL a lease is given when it is derived from the grant's expiry. */
const MIN_DERIVED_TTL_MS = 1_000;

/**
 * The TTL of a granted lease: the one asked for, else (the broker's default) the time left until
 * its expiry by the granting store's clock, at least 1 s.
 */
export function grantedTtlMs(askedMs: number, expireAt: number, now: number): number {
  return askedMs > 0 ? askedMs : Math.max(MIN_DERIVED_TTL_MS, expireAt - now);
}
