import type { ServerResponse } from "node:http";
import { BrokerClientError, InvalidArgumentError, NoProxyAvailableError } from "@proxybroker/sdk";

/** What a gateway client is told when it gets no lease: a status, a short text and its headers. */
export interface Refusal {
  readonly status: number;
  readonly message: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The answer for an acquire that failed: no proxy within the wait → 503 with `Retry-After`;
 * bad parameters → 400; the broker unreachable and no fallback proxy (or anything else the SDK
 * says) → 502 with its reason. Never a stack trace.
 */
export function refusalOf(err: unknown): Refusal {
  if (err instanceof NoProxyAvailableError) {
    const seconds = Math.max(1, Math.ceil((err.retryAfterMs > 0 ? err.retryAfterMs : 1_000) / 1_000));
    return {
      status: 503,
      message: `no proxy available within the wait: ${err.message}`,
      headers: { "retry-after": String(seconds) },
    };
  }
  if (err instanceof InvalidArgumentError) return { status: 400, message: `bad request: ${err.message}`, headers: {} };
  if (err instanceof BrokerClientError) return { status: 502, message: `no proxy: ${err.message}`, headers: {} };
  return { status: 502, message: "no proxy: the gateway could not lease one", headers: {} };
}

/** A malformed username or missing credentials: 407 asking for Basic credentials. */
export function authRefusal(message: string, realm: string): Refusal {
  return { status: 407, message, headers: { "proxy-authenticate": `Basic realm="${realm}"` } };
}

/** A request refused before any lease (a target the gateway does not reach). */
export class RefusalError extends Error {
  override readonly name = "RefusalError";
  constructor(readonly refusal: Refusal) {
    super(refusal.message);
  }
}

/** Write a refusal as the answer (a short text body; the connection closes). */
export function answer(res: ServerResponse, r: Refusal): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(r.status, { ...r.headers, "content-type": "text/plain; charset=utf-8", connection: "close" }).end(r.message);
}
