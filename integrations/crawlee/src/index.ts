/**
 * ProxyBroker for Crawlee 3 (HttpCrawler, CheerioCrawler, and any crawler with the same hooks):
 * every request gets its own lease — exclusive for its site and paced by the broker — through
 * `proxyConfiguration`; the lease is renewed while the request runs and released with the outcome
 * the SDK's classifier reads from the response (status, Retry-After, captcha and login URLs, a
 * missing marker, a body far smaller than usual) or from the error. A Crawlee session id is the
 * lease's sticky session key, so one session keeps its IP.
 *
 * ```ts
 * const pb = new ProxyBrokerCrawlee({ client: new ProxyBrokerClient({ address }) });
 * const crawler = new CheerioCrawler({
 *   proxyConfiguration: pb.proxyConfiguration,
 *   postNavigationHooks: [pb.postNavigationHook],
 *   requestHandler: pb.requestHandler(async ({ $, request }) => { ... }),
 *   errorHandler: pb.errorHandler(),
 *   failedRequestHandler: pb.failedRequestHandler(),
 * });
 * ```
 */
import { ProxyConfiguration } from "@crawlee/core";
import type { Request } from "@crawlee/core";
import { InvalidArgumentError, OutcomeError, classifyError } from "@proxybroker/sdk";
import type { Expectations, Lease, LeaseOutcome, ProxyBrokerClient, ResponseFacts } from "@proxybroker/sdk";

export interface ProxyBrokerCrawleeOptions {
  readonly client: ProxyBrokerClient;
  /** How long a request waits for a proxy inside the broker. Default 30 s. */
  readonly maxWaitMs?: number;
  /** Lease TTL (the client's or the broker's default when unset); heartbeats extend it while the request runs. */
  readonly ttlMs?: number;
  /** What a good page contains (markers, minimum size), per request or for all. */
  readonly expectations?: Expectations | ((request: Request) => Expectations | undefined);
  /** Crawlee session ids as sticky session keys (one session keeps its proxy). Default true. */
  readonly sessions?: boolean;
}

/** The response as a crawler's post-navigation hook sees it. */
interface HookResponse {
  readonly statusCode?: number | undefined;
  readonly url?: string | undefined;
  readonly headers?: Readonly<Record<string, string | readonly string[] | undefined>>;
}

/** What the hooks read of a crawling context (HttpCrawler's and CheerioCrawler's have it). */
export interface LeaseContext {
  readonly request: Request;
  readonly response?: HookResponse;
  readonly body?: string | Buffer;
}

interface Held {
  readonly lease: Lease;
  response?: ResponseFacts;
}

/** A lease per Crawlee request, released with the request's outcome. */
export class ProxyBrokerCrawlee {
  /** Hand it to the crawler as `proxyConfiguration`. */
  readonly proxyConfiguration: ProxyConfiguration;
  private readonly held = new Map<Request, Held>();

  constructor(private readonly opts: ProxyBrokerCrawleeOptions) {
    this.proxyConfiguration = new ProxyConfiguration({
      newUrlFunction: (sessionId, options) => this.lease(sessionId, options?.request),
    });
  }

  /** Leases held now (requests in flight). */
  get inFlight(): number {
    return this.held.size;
  }

  /** Keeps the response's status, URL and headers for the outcome (add it to `postNavigationHooks`). */
  readonly postNavigationHook = (ctx: LeaseContext): void => {
    const h = this.held.get(ctx.request);
    if (h === undefined || ctx.response === undefined) return;
    h.response = facts(ctx.response, ctx.request.url);
  };

  /**
   * Wraps the crawler's request handler: the response (with its body) is classified and the lease
   * released at once; a page the classifier takes for a block, a rate limit or a proxy error is
   * thrown as an `OutcomeError`, so that Crawlee retries it (through another proxy), and `fn`
   * runs only for a good page.
   */
  requestHandler<C extends LeaseContext>(fn: (ctx: C) => Promise<void> | void): (ctx: C) => Promise<void> {
    return async (ctx) => {
      const h = this.held.get(ctx.request);
      if (h !== undefined) {
        const response = h.response ?? (ctx.response === undefined ? undefined : facts(ctx.response, ctx.request.url));
        const outcome: LeaseOutcome =
          response === undefined
            ? { kind: "SUCCESS" }
            : this.opts.client.classify(
                { ...response, ...(ctx.body === undefined ? {} : { body: ctx.body.toString() }) },
                this.expectationsOf(ctx.request),
              );
        await this.release(ctx.request, outcome);
        if (outcome.kind !== "SUCCESS" && outcome.kind !== "TARGET_ERROR") throw new OutcomeError(outcome);
      }
      await fn(ctx);
    };
  }

  /**
   * Wraps the crawler's `errorHandler` (every failed attempt): the lease still held is released
   * with what the response said (Crawlee throws on 403 and 429 before the request handler) or
   * what the error implies (a proxy that refused, a timeout).
   */
  errorHandler<C extends LeaseContext>(fn?: (ctx: C, error: Error) => Promise<void> | void): (ctx: C, error: Error) => Promise<void> {
    return async (ctx, error) => {
      await this.releaseFailed(ctx.request, error);
      await fn?.(ctx, error);
    };
  }

  /** Wraps `failedRequestHandler` (retries used up) the same way. */
  failedRequestHandler<C extends LeaseContext>(
    fn?: (ctx: C, error: Error) => Promise<void> | void,
  ): (ctx: C, error: Error) => Promise<void> {
    return this.errorHandler(fn);
  }

  private async lease(sessionId: string | number | undefined, request: Request | undefined): Promise<string | null> {
    if (request === undefined)
      throw new InvalidArgumentError("ProxyBrokerCrawlee needs the request to lease a proxy for (Crawlee 3.5 or later)");
    // a retry of a request whose last lease was not released (it should have been): release it first
    await this.releaseFailed(request, new Error("lease replaced by a retry"));
    const sessionKey = this.opts.sessions !== false && sessionId !== undefined ? String(sessionId) : undefined;
    const lease = await this.opts.client.acquire(request.url, {
      maxWaitMs: this.opts.maxWaitMs ?? 30_000,
      ...(this.opts.ttlMs === undefined ? {} : { ttlMs: this.opts.ttlMs }),
      ...(sessionKey === undefined ? {} : { sessionKey }),
    });
    this.held.set(request, { lease });
    return lease.proxy.url;
  }

  private async releaseFailed(request: Request, error: Error): Promise<void> {
    const h = this.held.get(request);
    if (h === undefined) return;
    const outcome: LeaseOutcome =
      h.response !== undefined
        ? this.opts.client.classify(h.response, this.expectationsOf(request))
        : (() => {
            const c = classifyError(error, { targetHost: h.lease.domain });
            return { kind: c.kind, httpStatus: c.httpStatus, retryAfterMs: c.retryAfterMs, detail: c.reason };
          })();
    await this.release(request, outcome);
  }

  private async release(request: Request, outcome: LeaseOutcome): Promise<void> {
    const h = this.held.get(request);
    if (h === undefined) return;
    this.held.delete(request);
    await h.lease.release(outcome).catch(() => undefined);
  }

  private expectationsOf(request: Request): Expectations {
    const e = this.opts.expectations;
    return (typeof e === "function" ? e(request) : e) ?? {};
  }
}

/** The classifier's view of a crawler's response. */
function facts(r: HookResponse, requestUrl: string): ResponseFacts {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers ?? {})) {
    if (v !== undefined) headers[k.toLowerCase()] = typeof v === "string" ? v : v.join(", ");
  }
  return { status: r.statusCode ?? 0, url: r.url ?? requestUrl, headers, requestUrl };
}
