import { Agent as HttpAgent } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import type { Socket } from "node:net";
import type { Lease, LeaseOutcome, ProxyBrokerClient } from "@proxybroker/sdk";
import { answer, RefusalError, refusalOf } from "./answers.js";
import type { Refusal } from "./answers.js";
import { BodySample } from "./body-sample.js";
import { proxyCredentials } from "./credentials.js";
import type { FailingTargets } from "./failing-targets.js";
import { forwardHttp, upstreamOf, type Upstream } from "./forward-http.js";
import type { KeptLeases } from "./kept-leases.js";
import type { GatewayMetrics } from "./metrics.js";
import { observeResponse } from "./observe-response.js";
import type { Observed } from "./observe-response.js";
import { LEASE_HEADERS, outcomeOfAnswer } from "./outcome.js";
import type { Taken } from "./outcome.js";
import { paramHeadersRefusal, withParamHeaders } from "./params.js";
import type { GatewayParams } from "./params.js";
import { httpTarget, type HttpTarget } from "./targets.js";

/**
 * Plain-HTTP requests go to their upstream proxy on a connection of their own, never kept for
 * another: HTTP proxies such as tinyproxy close each connection after its answer, and a socket
 * reused just as it closes fails the next request with a reset (a PROXY_ERROR against a healthy
 * proxy). Each lease may name another proxy anyway.
 */
export const UPSTREAM_HTTP = new HttpAgent({ keepAlive: false });
export const UPSTREAM_HTTPS = new HttpsAgent({ keepAlive: false });

/** One try of a request: `arm` starts the site's time (upstreamTimeoutMs), `cancel` drops the forward. */
interface Attempt {
  cancel: (() => void) | undefined;
  readonly arm: () => void;
}

/** What plain-HTTP requests need of the gateway. */
export interface PlainHttpDeps {
  /** Who asks, and with what parameters (the gateway's credentials check); throws RefusalError. */
  readonly admit: (req: IncomingMessage, username: string, password: string) => GatewayParams;
  /** A lease (or a kept one) for the request's target; throws RefusalError or the SDK's error. */
  readonly lease: (params: GatewayParams, target: string, hostname: string, port: number) => Promise<Taken>;
  readonly kept: KeptLeases;
  readonly metrics: GatewayMetrics;
  /** Hosts that failed through two proxies are noted here. */
  readonly failing: FailingTargets;
  /** Time for the site's answer to start, ms. */
  readonly upstreamTimeoutMs: number;
}

/**
 * Plain-HTTP requests (docs/gateway.md, "What a request gets"): each gets a lease for its
 * domain-key (or a kept one), is forwarded through the leased proxy (forward-http.ts), watched as
 * its answer streams back (observe-response.ts) and released with the outcome read from it; a GET
 * or HEAD that failed at the proxy is sent once more through another proxy.
 */
export class PlainHttp {
  /** The lease of each request being forwarded, and the client that granted it. */
  private readonly httpLeases = new WeakMap<IncomingMessage, Taken & { readonly unwatch: () => void }>();
  /**
   * The lease of a request's failed first try, held until its retry ended: the retry cannot be
   * given the same proxy (a lease is exclusive per pair), and when the retry fails the same way the
   * first try's outcome becomes the site's failure too.
   */
  private readonly failedTries = new WeakMap<IncomingMessage, { readonly lease: Lease; readonly outcome: LeaseOutcome }>();
  /** The parameters of requests, read on their first try. */
  private readonly admitted = new WeakMap<IncomingMessage, GatewayParams>();
  /** Requests whose client went away before its answer went out (their leases are ABANDONED). */
  private readonly gone = new WeakSet<IncomingMessage>();
  /** Requests whose leased proxy refused them before the site answered (its 407 to our credentials). */
  private readonly failedAtProxy = new WeakMap<IncomingMessage, string>();
  /** Per lease: the socket of the request using it now, cut if it is lost. */
  private readonly cuts = new WeakMap<Lease, { socket: Socket | undefined }>();

  constructor(private readonly deps: PlainHttpDeps) {}

  /**
   * The proxy must not be used once its lease is lost: the request using it then is cut. One
   * listener per lease, however many requests a kept lease serves.
   */
  private cutOnLoss(lease: Lease, socket: Socket): () => void {
    let cut = this.cuts.get(lease);
    if (cut === undefined) {
      const holder: { socket: Socket | undefined } = { socket: undefined };
      lease.signal.addEventListener("abort", () => void holder.socket?.destroy(), { once: true });
      this.cuts.set(lease, holder);
      cut = holder;
    }
    cut.socket = socket;
    const mine = cut;
    return () => {
      if (mine.socket === socket) mine.socket = undefined;
    };
  }

  /**
   * A plain-HTTP request's lease: the credentials and parameters admitted, the target rebuilt from
   * what was parsed (the target checked is the target forwarded). Throws RefusalError or the SDK's error.
   */
  private async leaseHttp(req: IncomingMessage): Promise<{ readonly taken: Taken; readonly target: HttpTarget }> {
    const target = httpTarget(req.url ?? "");
    const params = this.paramsOf(req);
    req.url = target.href;
    // (a failed first try's lease is released once its retry ended: serve)
    const taken = await this.deps.lease(params, target.href, target.hostname, target.port);
    this.httpLeases.set(req, { ...taken, unwatch: this.cutOnLoss(taken.lease, req.socket) });
    return { taken, target };
  }

  /**
   * A request's parameters: its credentials admitted, the username's parameters with the
   * parameter headers over them (those then removed). Once per request: a retry has them too.
   */
  private paramsOf(req: IncomingMessage): GatewayParams {
    const known = this.admitted.get(req);
    if (known !== undefined) return known;
    const { username, password } = proxyCredentials(req.headers["proxy-authorization"]);
    const base = this.deps.admit(req, username, password);
    let params: GatewayParams;
    try {
      params = withParamHeaders(base, req);
    } catch (err) {
      throw new RefusalError(paramHeadersRefusal(err));
    }
    this.admitted.set(req, params);
    return params;
  }

  /**
   * One try of a plain-HTTP request: its lease, then (`attempt.arm`: the site's time starts)
   * forwarded through the leased proxy (`attempt.cancel` drops it); a refusal answered in its
   * turn. False when nothing was sent: refused, or the client gone while the lease was awaited.
   */
  private async forwardOnce(req: IncomingMessage, res: ServerResponse, attempt: Attempt): Promise<boolean> {
    let leased: { readonly taken: Taken; readonly target: HttpTarget };
    try {
      leased = await this.leaseHttp(req);
    } catch (err) {
      answer(res, err instanceof RefusalError ? err.refusal : refusalOf(err));
      return false;
    }
    if (res.headersSent || res.writableEnded || res.destroyed) return false;
    const { taken, target } = leased;
    let upstream: Upstream;
    try {
      upstream = upstreamOf(taken.lease.proxy.url);
    } catch (err) {
      this.refusedAtProxy(req, res, { status: 502, message: `the leased proxy cannot be used: ${String(err)}`, headers: {} });
      return true;
    }
    attempt.arm();
    const call = forwardHttp({ req, res, target, upstream, agents: { http: UPSTREAM_HTTP, https: UPSTREAM_HTTPS } });
    attempt.cancel = call.cancel;
    const forwarded = await call.done;
    if (forwarded.kind === "refused") this.refusedAtProxy(req, res, { status: 597, message: forwarded.message, headers: {} });
    return true;
  }

  /** The leased proxy failed before the site answered, in a way not worth a retry: a PROXY_ERROR, said to the client. */
  private refusedAtProxy(req: IncomingMessage, res: ServerResponse, refusal: Refusal): void {
    this.failedAtProxy.set(req, refusal.message);
    answer(res, refusal);
  }

  /** Serve a plain-HTTP request: leased, forwarded, watched, its lease released with what came back. */
  async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const retryable = req.method === "GET" || req.method === "HEAD";
    let attempt = 0;
    let held = false;
    let timedOut = false;
    // The client went away before its whole answer went out: its own doing, not the proxy's.
    // the forward destroys the upstream request at once (forward-http.ts), so
    // the lease is released now, ABANDONED, and nothing is retried.
    let clientGone = false;
    res.once("close", () => {
      if (res.writableFinished) return;
      clientGone = true;
      this.gone.add(req);
      void Promise.resolve(this.settle(req, seen, false)).then(() => this.releaseFailedTry(req));
    });
    const seen = observeResponse(res, {
      extraHeaders: () => {
        const l = this.httpLeases.get(req)?.lease;
        return l === undefined ? {} : { [LEASE_HEADERS.proxy]: l.proxy.id, [LEASE_HEADERS.source]: l.source };
      },
      // a proxy-made error (nothing came from the site) on the first try of a GET or HEAD: kept
      // from the client, and the request goes once more through another proxy
      hold: (status) => {
        held = !clientGone && retryable && attempt === 0 && status >= 500 && this.httpLeases.has(req);
        return held;
      },
      // the whole answer went by: released (or kept) before the client sees its end
      beforeEnd: () => (timedOut ? undefined : this.settle(req, seen, false)),
    });
    for (;;) {
      held = false;
      // no answer from the site in time (counted once the lease is held, as interception does: a
      // wait for a proxy is no proxy's fault): a 504, and the request through the proxy is dropped
      timedOut = false;
      let timer: NodeJS.Timeout | undefined;
      const attemptNow: Attempt = {
        cancel: undefined,
        arm: () => {
          timer = setTimeout(() => {
            if (res.headersSent) return;
            timedOut = true;
            attemptNow.cancel?.();
            answer(res, { status: 504, message: `no answer within ${this.deps.upstreamTimeoutMs} ms`, headers: {} });
          }, this.deps.upstreamTimeoutMs);
        },
      };
      const sent = await this.forwardOnce(req, res, attemptNow).catch(() => false);
      clearTimeout(timer);
      // what beforeEnd did not release: a try held for a retry, a timeout, a client gone, a lease not used
      await this.settle(req, seen, held, sent ? (timedOut ? "timeout" : undefined) : "unsent");
      if (!held || clientGone) {
        await this.releaseFailedTry(req);
        return;
      }
      attempt++;
      Object.assign(seen, { status: 0, headers: {}, answered: false, own: false, body: new BodySample() });
    }
  }

  /**
   * Release a plain-HTTP request's lease (once) with what it showed; a held try waits for its
   * retry's lease. A retry that failed at its proxy as the first try did makes both the target's
   * failure: neither proxy is blamed, and the host is not tried again for a while.
   */
  private settle(req: IncomingMessage, seen: Observed, held: boolean, cause?: "timeout" | "unsent"): Promise<void> | undefined {
    const taken = this.httpLeases.get(req);
    if (taken === undefined) return undefined;
    this.httpLeases.delete(req);
    let outcome: LeaseOutcome =
      cause === "unsent"
        ? { kind: "ABANDONED", detail: "not sent: the client went away, or was answered, while the lease was awaited" }
        : cause === "timeout"
          ? { kind: "PROXY_ERROR", detail: `no answer within ${this.deps.upstreamTimeoutMs} ms` }
          : this.outcomeOf(req, taken.client, seen, held);
    const first = this.failedTries.get(req);
    if (!held && cause === undefined && first !== undefined && outcome.kind === "PROXY_ERROR" && seen.own) {
      const detail = `failed through two proxies: ${first.outcome.detail ?? ""}; then ${outcome.detail ?? ""}`;
      outcome = { ...outcome, kind: "TARGET_ERROR", detail };
      this.failedTries.set(req, { lease: first.lease, outcome: { ...first.outcome, kind: "TARGET_ERROR", detail } });
      this.deps.failing.note(new URL(req.url ?? "http://unknown/").hostname, outcome.detail ?? "");
    }
    if (held) {
      this.failedTries.set(req, { lease: taken.lease, outcome });
      return undefined;
    }
    this.deps.metrics.done("http", outcome.kind);
    taken.unwatch();
    // undefined when the lease is kept: the answer's end goes out at once
    return this.deps.kept.finish(taken.keepKey, taken, outcome);
  }

  private async releaseFailedTry(req: IncomingMessage): Promise<void> {
    const failed = this.failedTries.get(req);
    if (failed === undefined) return;
    this.failedTries.delete(req);
    this.deps.metrics.done("http", failed.outcome.kind);
    await failed.lease.release(failed.outcome).catch(() => undefined);
  }

  private outcomeOf(req: IncomingMessage, client: ProxyBrokerClient, seen: Observed, held: boolean): LeaseOutcome {
    if (this.gone.has(req)) return { kind: "ABANDONED", detail: "the client went away before its answer went out" };
    const failed = this.failedAtProxy.get(req);
    if (held || failed !== undefined || (seen.answered && seen.own)) {
      return { kind: "PROXY_ERROR", httpStatus: seen.status, detail: failed ?? `the proxy answered ${seen.status}` };
    }
    if (!seen.answered) return { kind: "ABANDONED" };
    return outcomeOfAnswer(client, {
      url: req.url ?? "",
      status: seen.status,
      headers: seen.headers,
      sample: seen.body.sample,
      bytes: seen.body.bytes,
    });
  }
}
