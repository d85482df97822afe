import type { IncomingMessage, ServerResponse } from "node:http";
import { classifyError } from "@proxybroker/sdk";
import type { LeaseOutcome } from "@proxybroker/sdk";
import { answer, RefusalError, refusalOf } from "./answers.js";
import { answerHeaders, sendUpstream, UpstreamTimeoutError } from "./intercept.js";
import type { UpstreamAgents } from "./upstream-agents.js";
import type { TunnelTarget } from "./intercept.js";
import { BodySample } from "./body-sample.js";
import { LEASE_HEADERS, outcomeOfAnswer } from "./outcome.js";
import type { Taken } from "./outcome.js";
import type { GatewayParams } from "./params.js";
import { tunnelRequest } from "./tunnel-request.js";

export interface InterceptedDeps {
  /** A lease for the request (throws `RefusalError` or the SDK's error). */
  readonly lease: (params: GatewayParams, url: string, host: string, port: number) => Promise<Taken>;
  /** The upstream agents, kept alive per (proxy, site) between the pair's leases. */
  readonly agents: UpstreamAgents;
  readonly upstreamTimeoutMs: number;
  /** A request ended with this outcome (metrics). */
  readonly done: (outcome: string) => void;
  /** The request through `taken` went through: its lease is kept for the next request, or released. */
  readonly finish: (taken: Taken, outcome: LeaseOutcome) => Promise<void> | undefined;
}

/**
 * One request inside an intercepted tunnel: its own lease, sent through the leased proxy to the
 * tunnel's host (the site's TLS verified), streamed back, classified, released. A GET or HEAD that
 * failed at the proxy before any answer is sent once more through another proxy (the failed
 * lease held until the retry has its own). What it asks for, or why it is refused:
 * tunnel-request.ts.
 */
export async function serveIntercepted(
  deps: InterceptedDeps,
  req: IncomingMessage,
  res: ServerResponse,
  target: TunnelTarget,
): Promise<void> {
  const asked = tunnelRequest(req, target);
  if ("refused" in asked) {
    answer(res, asked.refused);
    return;
  }
  const { params, url } = asked;
  const retryable = req.method === "GET" || req.method === "HEAD";
  let failed: { readonly taken: Taken; readonly outcome: LeaseOutcome } | undefined;
  for (let attempt = 0; ; attempt++) {
    let taken: Taken;
    try {
      taken = await deps.lease(params, url, target.host, target.port);
    } catch (err) {
      answer(res, err instanceof RefusalError ? err.refusal : refusalOf(err));
      return;
    } finally {
      if (failed !== undefined) await failed.taken.lease.release(failed.outcome).catch(() => undefined);
      failed = undefined;
    }
    const { lease, client } = taken;
    const origin = new URL(url).origin;
    const agent = deps.agents.get(lease.proxy.url, origin);
    // kept for the pair's next lease only when this request ended cleanly
    let clean = false;
    const started = Date.now();
    try {
      const up = await sendUpstream(url, req, agent, lease.signal, deps.upstreamTimeoutMs);
      res.writeHead(up.statusCode, {
        ...answerHeaders(up.headers),
        [LEASE_HEADERS.proxy]: lease.proxy.id,
        [LEASE_HEADERS.source]: lease.source,
      });
      const body = new BodySample();
      for await (const chunk of up.body) {
        const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
        body.add(buf);
        if (!res.write(buf)) await drainedOrGone(res);
        if (res.destroyed) throw new ClientGoneError();
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(up.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(", ") : v;
      const outcome = outcomeOfAnswer(client, { url, status: up.statusCode, headers, sample: body.sample, bytes: body.bytes });
      deps.done(outcome.kind);
      clean = !lease.signal.aborted;
      // released (or kept) before the client sees the end: its next request finds the proxy free
      await deps.finish(taken, { ...outcome, latencyMs: Date.now() - started });
      res.end();
      return;
    } catch (err) {
      if (err instanceof ClientGoneError || err instanceof UpstreamTimeoutError) {
        // the client went away (nobody reads the rest), or the site did not answer in time
        const outcome: LeaseOutcome =
          err instanceof ClientGoneError ? { kind: "ABANDONED", detail: err.message } : { kind: "PROXY_ERROR", detail: err.message };
        deps.done(outcome.kind);
        await lease.release(outcome).catch(() => undefined);
        if (err instanceof UpstreamTimeoutError) answer(res, { status: 504, message: err.message, headers: {} });
        else res.destroy();
        return;
      }
      const c = lease.signal.aborted ? undefined : classifyError(err, { targetHost: target.host });
      const outcome: LeaseOutcome = c === undefined ? { kind: "ABANDONED" } : { kind: c.kind, detail: c.reason };
      deps.done(outcome.kind);
      if (!res.headersSent && retryable && attempt === 0 && outcome.kind === "PROXY_ERROR") {
        failed = { taken, outcome };
        continue;
      }
      await lease.release(outcome).catch(() => undefined);
      answer(res, {
        status: 502,
        message: `the request through proxy ${lease.proxy.id} failed: ${c?.reason ?? "its lease was lost"}`,
        headers: {},
      });
      return;
    } finally {
      // destroyed, not kept: a request still waiting on a proxy that never answered ends with it
      if (!clean) deps.agents.discard(lease.proxy.url, origin);
    }
  }
}

/** The gateway's client closed its connection while its answer was being sent. */
class ClientGoneError extends Error {
  override readonly name = "ClientGoneError";
  constructor() {
    super("the client went away before the whole answer was sent");
  }
}

/** Resolves when `res` can take more, or when it is gone (a destroyed response never drains). */
function drainedOrGone(res: ServerResponse): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
