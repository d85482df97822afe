/**
 * The "gateway" strategy's HTTPS client (CRAWL_HTTPS), as a real HTTPS crawler sends through a
 * proxy: a CONNECT through the gateway, TLS to the site inside it (trusting the test CA: the
 * site's own certificate in tunnel mode, the gateway's host certificate in interception mode), and
 * keep-alive — one kept-alive connection per crawl loop, as Python `requests` sessions in threads —
 * or, with `perRequest`, a new connection (one CONNECT) for every request, closed once its answer
 * was read. The wait for a free proxy rides in the proxy username (`wait-N`, any password): the
 * gateway reads a CONNECT's parameters there. A loop whose request failed gets a fresh connection.
 */
import { ProxyAgent, request } from "undici";
import { CONTENT_MARKER } from "../sites.js";
import type { Attempt, AttemptFn } from "./common.js";

export interface HttpsGatewayOptions {
  /** `127.0.0.1:port` of the gateway. */
  readonly gatewayAddress: string;
  /** The CA to trust (PEM). */
  readonly caPem: string;
  /** The wait for a free proxy, seconds (the username's `wait-N`). */
  readonly waitSeconds: number;
  /** The most a request may take, the wait included, ms. */
  readonly timeoutMs: number;
  /** A new connection for every request instead of one kept alive per loop. */
  readonly perRequest?: boolean;
}

export interface HttpsGateway {
  readonly attempt: AttemptFn;
  /** Close every loop's connection. */
  close(): Promise<void>;
}

/** The gateway's refusal of a CONNECT, as undici reports it: no proxy was free within the wait (tunnel mode). */
const CONNECT_503 = /Proxy response \(503\)/;

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return typeof v === "string" ? v : undefined;
}

export function httpsGateway(options: HttpsGatewayOptions): HttpsGateway {
  const token = `Basic ${Buffer.from(`wait-${options.waitSeconds}:x`).toString("base64")}`;
  const agents = new Map<number, ProxyAgent>();
  const agentOf = (loop: number): ProxyAgent => {
    let agent = agents.get(loop);
    if (agent === undefined) {
      // one connection per origin, and a loop crawls one site: one kept-alive tunnel per loop
      agent = new ProxyAgent({ uri: `http://${options.gatewayAddress}`, token, requestTls: { ca: options.caPem }, connections: 1 });
      agents.set(loop, agent);
    }
    return agent;
  };
  const drop = (loop: number): void => {
    const agent = agents.get(loop);
    agents.delete(loop);
    void agent?.destroy().catch(() => undefined);
  };
  const fetchPage = async (url: string, loop: number): Promise<Attempt> => {
    const r = await request(url, {
      method: "GET",
      dispatcher: agentOf(loop),
      signal: AbortSignal.timeout(options.timeoutMs),
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    const body = await r.body.text();
    // only interception puts the lease's headers on the answer; in tunnel mode the site answers
    const proxy = header(r.headers, "x-proxybroker-proxy");
    if (r.statusCode === 503 && proxy === undefined) return { kind: "no-proxy" };
    const source = header(r.headers, "x-proxybroker-source");
    return {
      kind: "fetched",
      proxy: proxy ?? "",
      status: r.statusCode,
      body,
      accepted: r.statusCode === 200 && body.includes(CONTENT_MARKER),
      ...(source !== undefined ? { source } : {}),
    };
  };
  const attempt = async (url: string, loop: number): Promise<Attempt> => {
    try {
      return await fetchPage(url, loop);
    } catch (err) {
      drop(loop);
      if (err instanceof Error && CONNECT_503.test(err.message)) return { kind: "no-proxy" };
      return { kind: "fetched", proxy: "", status: 0, body: "", accepted: false };
    } finally {
      // a new connection for the next request: this one closes now that its answer was read
      if (options.perRequest === true) drop(loop);
    }
  };
  return {
    attempt,
    close: async () => {
      const all = [...agents.values()];
      agents.clear();
      await Promise.all(all.map((a) => a.destroy().catch(() => undefined)));
    },
  };
}
