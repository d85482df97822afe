import { isTextual } from "@proxybroker/sdk";
import type { Lease, LeaseOutcome, ProxyBrokerClient } from "@proxybroker/sdk";

/** Response headers naming the lease an answer went through. */
export const LEASE_HEADERS = { proxy: "x-proxybroker-proxy", source: "x-proxybroker-source" } as const;

/** A lease and the SDK client (the pool) that granted it. */
export interface Taken {
  readonly lease: Lease;
  readonly client: ProxyBrokerClient;
  /** The key its lease may be kept under for the next request (kept-leases.ts); undefined: never kept. */
  readonly keepKey?: string;
}

/** What came back from the site, as the gateway saw it go by. */
export interface AnswerFacts {
  readonly url: string;
  readonly status: number;
  /** Lowercase names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The first bytes of the body (see observe-response.ts). */
  readonly sample: Buffer;
  /** The whole body's size. */
  readonly bytes: number;
}

/** The outcome the SDK's classifier reads from an answer (status, Retry-After, block pages, size). */
export function outcomeOfAnswer(client: ProxyBrokerClient, a: AnswerFacts): LeaseOutcome {
  const c = client.classify({
    status: a.status,
    url: a.url,
    requestUrl: a.url,
    headers: a.headers,
    ...(isTextual(a.headers["content-type"]) ? { body: a.sample.toString("utf8") } : {}),
    bodyBytes: a.bytes,
  });
  return { kind: c.kind, httpStatus: a.status, retryAfterMs: c.retryAfterMs, bytes: a.bytes, detail: c.reason };
}
