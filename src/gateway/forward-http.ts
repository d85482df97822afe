import { request as httpRequest, STATUS_CODES, validateHeaderName, validateHeaderValue } from "node:http";
import type { Agent, ClientRequest, IncomingMessage, ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Agent as HttpsAgent } from "node:https";
import { SocksProxyAgent } from "socks-proxy-agent";

/**
 * The statuses the gateway answers itself when the upstream proxy failed before the site's
 * answer began (proxy-chain's, which clients of HTTP proxies know): nothing came from the site.
 */
export const UPSTREAM_FAILED: Readonly<Record<string, { readonly status: number; readonly text: string }>> = {
  ENOTFOUND: { status: 593, text: "Not Found" },
  ECONNREFUSED: { status: 594, text: "Connection Refused" },
  ECONNRESET: { status: 595, text: "Connection Reset" },
  EPIPE: { status: 596, text: "Broken Pipe" },
  ETIMEDOUT: { status: 504, text: STATUS_CODES[504] ?? "Gateway Timeout" },
};
const OTHER_FAILURE = { status: 599, text: "Upstream Error" };
/** An upstream status outside 100–999 (Node would throw writing it). */
const OUT_OF_RANGE = 592;

/** Headers of one hop only: never passed on, either way (RFC 9110 §7.6.1, and the old Proxy-Connection). */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * Where a leased proxy is reached. An http or https proxy is sent the request in absolute form,
 * with its credentials; a socks5 proxy opens a connection to the site (its agent), which is sent
 * the request in origin form.
 */
export type Upstream =
  | {
      readonly kind: "http" | "https";
      readonly host: string;
      readonly port: number;
      /** `Basic …`, or undefined when the proxy URL has no credentials. */
      readonly authorization: string | undefined;
    }
  | { readonly kind: "socks"; readonly agent: Agent };

/** The proxies' URLs parsed, at most this many remembered (a pool's proxies, usually far fewer). */
const UPSTREAMS_MAX = 10_000;
const upstreams = new Map<string, Upstream>();

/** A proxy URL (`http://user:pass@host:port`, https, socks5) as the forward needs it; parsed once per URL. */
export function upstreamOf(proxyUrl: string): Upstream {
  const known = upstreams.get(proxyUrl);
  if (known !== undefined) return known;
  const upstream = parseUpstream(proxyUrl);
  if (upstreams.size >= UPSTREAMS_MAX) upstreams.clear();
  upstreams.set(proxyUrl, upstream);
  return upstream;
}

function parseUpstream(proxyUrl: string): Upstream {
  const u = new URL(proxyUrl);
  if (u.protocol === "socks5:" || u.protocol === "socks5h:") return { kind: "socks", agent: new SocksProxyAgent(u) };
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`the proxy URL must be http, https or socks5 (was ${u.protocol})`);
  const authorization =
    u.username === "" && u.password === ""
      ? undefined
      : `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString("base64")}`;
  const tls = u.protocol === "https:";
  return {
    kind: tls ? "https" : "http",
    host: u.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: u.port === "" ? (tls ? 443 : 80) : Number(u.port),
    authorization,
  };
}

/**
 * The request's headers as sent on: hop-by-hop headers and malformed ones dropped, `Host` set to
 * the target's (the target checked is the target forwarded), the upstream's credentials added.
 */
export function forwardedHeaders(raw: readonly string[], host: string, authorization: string | undefined): string[] {
  const out = ["Host", host];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? "";
    const lower = name.toLowerCase();
    if (lower === "host" || HOP_BY_HOP.has(lower)) continue;
    const value = raw[i + 1] ?? "";
    if (!validHeader(name, value)) continue;
    out.push(name, value);
  }
  if (authorization !== undefined) out.push("Proxy-Authorization", authorization);
  return out;
}

/** The answer's headers as sent back: hop-by-hop and malformed ones dropped (Node frames the body again). */
export function answeredHeaders(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? "";
    const value = raw[i + 1] ?? "";
    if (HOP_BY_HOP.has(name.toLowerCase()) || !validHeader(name, value)) continue;
    out.push(name, value);
  }
  return out;
}

function validHeader(name: string, value: string): boolean {
  try {
    validateHeaderName(name);
    validateHeaderValue(name, value);
    return true;
  } catch {
    return false;
  }
}

/** How a forward ended: the answer went (or is going) back, or the upstream proxy refused our credentials. */
export type Forwarded = { readonly kind: "answered" } | { readonly kind: "refused"; readonly message: string };

export interface ForwardOptions {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The request's target, as checked. */
  readonly target: {
    readonly href: string;
    readonly host: string;
    readonly hostname: string;
    readonly port: number;
    readonly path: string;
  };
  readonly upstream: Upstream;
  /** Connections to http and https proxies: one per request, never kept (see gateway.ts). */
  readonly agents: { readonly http: Agent; readonly https: HttpsAgent };
}

/**
 * Send a plain-HTTP request through an upstream HTTP proxy and stream its answer back. The answer
 * is written with `writeHead`; an upstream that fails before it answered gets the gateway's own
 * status (UPSTREAM_FAILED) written without one; a failure after it began cuts the client's
 * connection, as the site's own would. A client gone drops the upstream request. Resolves once
 * the answer went out or was cut (a held error answer, which does not end: at once).
 */
export function forwardHttp(o: ForwardOptions): Promise<Forwarded> {
  const { req, res } = o;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (f: Forwarded): void => {
      if (settled) return;
      settled = true;
      resolve(f);
    };
    const out = send(o);
    res.once("close", () => {
      out.destroy();
      settle({ kind: "answered" });
    });
    out.once("response", (answer: IncomingMessage) => {
      if (answer.statusCode === 407) {
        answer.resume();
        out.destroy();
        settle({ kind: "refused", message: "the upstream proxy refused the credentials of its proxy URL (407)" });
        return;
      }
      const status = answer.statusCode ?? 0;
      res.writeHead(status < 100 || status > 999 ? OUT_OF_RANGE : status, answer.statusMessage, answeredHeaders(answer.rawHeaders));
      // cut short by the upstream: the client's connection is cut too, never ended as if whole
      answer.once("close", () => {
        if (!answer.complete) res.destroy();
      });
      answer.pipe(res);
    });
    out.on("error", (err: NodeJS.ErrnoException) => {
      if (res.headersSent) {
        res.destroy();
        settle({ kind: "answered" });
        return;
      }
      const failed = UPSTREAM_FAILED[err.code ?? ""] ?? OTHER_FAILURE;
      res.statusCode = failed.status;
      res.setHeader("content-type", "text/plain; charset=utf-8");
      res.end(failed.text);
      settle({ kind: "answered" });
    });
    req.pipe(out);
  });
}

/** The request to the upstream proxy (or, through socks5, to the site). */
function send(o: ForwardOptions): ClientRequest {
  const { req, target, upstream } = o;
  // sites' answers are passed on as leniently as browsers read them
  if (upstream.kind === "socks") {
    return httpRequest({
      host: target.hostname.replace(/^\[(.*)\]$/, "$1"),
      port: target.port,
      method: req.method,
      path: target.path,
      headers: forwardedHeaders(req.rawHeaders, target.host, undefined),
      agent: upstream.agent,
      insecureHTTPParser: true,
    });
  }
  const options = {
    host: upstream.host,
    port: upstream.port,
    method: req.method,
    path: target.href,
    headers: forwardedHeaders(req.rawHeaders, target.host, upstream.authorization),
    insecureHTTPParser: true,
  };
  return upstream.kind === "https"
    ? httpsRequest({ ...options, agent: o.agents.https })
    : httpRequest({ ...options, agent: o.agents.http });
}
