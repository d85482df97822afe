import { ProxyAgent, Response as UndiciResponse, fetch as undiciFetch } from "undici";
import type { RequestInit, Response } from "undici";
import type { Classification, Classifier, Expectations } from "../classify/index.js";
import { isTextual } from "../classify/index.js";
import type { AcquireOptions } from "./acquire-options.js";
import type { Lease, LeasedProxy, LeaseSource } from "./lease.js";

/** Options of `client.fetch`. */
export interface FetchOptions extends AcquireOptions {
  /** The request (method, headers, body); `dispatcher` is set by the SDK. */
  readonly init?: Omit<RequestInit, "dispatcher">;
  /** What a good page looks like (markers, minimum size) for the classifier. */
  readonly expectations?: Expectations;
  /** Give up on the request after this long, ms (a PROXY_ERROR). Default 30000. */
  readonly timeoutMs?: number;
}

/** What `client.fetch` returns: the response (body already read, still readable) and its reading. */
export interface FetchResult {
  readonly response: Response;
  /** The body as read (also available through `response`). */
  readonly body: Buffer;
  /** The outcome the lease was released with. */
  readonly outcome: Classification;
  readonly proxy: LeasedProxy;
  readonly source: LeaseSource;
}

interface FetchDeps {
  readonly acquire: (target: string, options: AcquireOptions) => Promise<Lease>;
  readonly classifier: Classifier;
  readonly clock: () => number;
}

/**
 * Lease a proxy for `url`, send the request through it (a fresh undici ProxyAgent per lease: no
 * keep-alive across leases, which HTTP proxies such as tinyproxy reset), classify the response,
 * release the lease with that outcome, and return the response. A request that fails without a
 * response is released with the outcome its error implies and the error is rethrown.
 */
export async function leasedFetch(deps: FetchDeps, url: string, options: FetchOptions): Promise<FetchResult> {
  const lease = await deps.acquire(url, options);
  const agent = new ProxyAgent({ uri: lease.proxy.url });
  const started = deps.clock();
  const signals = [lease.signal, AbortSignal.timeout(options.timeoutMs ?? 30_000)];
  if (options.init?.signal) signals.push(options.init.signal);
  try {
    const res = await undiciFetch(url, { ...options.init, dispatcher: agent, signal: AbortSignal.any(signals) });
    const body = Buffer.from(await res.arrayBuffer());
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const outcome = deps.classifier.classify(
      {
        status: res.status,
        url: res.url || url,
        requestUrl: url,
        headers,
        ...(isTextual(headers["content-type"]) ? { body: body.toString("utf8") } : {}),
        bodyBytes: body.length,
      },
      options.expectations,
    );
    await lease
      .release({
        kind: outcome.kind,
        httpStatus: res.status,
        latencyMs: deps.clock() - started,
        retryAfterMs: outcome.retryAfterMs,
        bytes: body.length,
        detail: outcome.reason,
      })
      .catch(() => undefined);
    const noBody = res.status === 204 || res.status === 304 || (res.status >= 100 && res.status < 200);
    const response = new UndiciResponse(noBody ? null : body, { status: res.status, statusText: res.statusText, headers: res.headers });
    return { response, body, outcome, proxy: lease.proxy, source: lease.source };
  } catch (err) {
    if (!lease.ended) {
      const c = lease.signal.aborted ? undefined : deps.classifier.classifyError(err, { targetHost: new URL(url).hostname });
      await lease
        .release(
          c === undefined
            ? { kind: "ABANDONED" }
            : { kind: c.kind, httpStatus: c.httpStatus, latencyMs: deps.clock() - started, detail: c.reason },
        )
        .catch(() => undefined);
    }
    throw err;
  } finally {
    void agent.close().catch(() => undefined);
  }
}
