import { request as httpRequest, STATUS_CODES, validateHeaderName, validateHeaderValue } from "node:http";
import type { Agent, ClientRequest, IncomingMessage, ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Agent as HttpsAgent } from "node:https";
import { SocksProxyAgent } from "socks-proxy-agent";
import { HOP_BY_HOP } from "./hop-by-hop.js";

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
    host: unbracketed(u.hostname),
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

/** A forward under way: `done` once it ended; `cancel` drops it (the gateway answered itself, a 504). */
export interface ForwardCall {
  readonly done: Promise<Forwarded>;
  cancel(): void;
}

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

const ANSWERED: Forwarded = { kind: "answered" };
/** What Node refuses in a status text (as in a header value); such a text is not passed on. */
const BAD_REASON = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * Send a plain-HTTP request through an upstream proxy and stream its answer back. The answer is
 * written with `writeHead`; an upstream that fails before it answered gets the gateway's own
 * status (UPSTREAM_FAILED) written without one; a failure after it began cuts the client's
 * connection, as the site's own would. Nothing is sent when the client is gone already; a client
 * gone, or an answer the gateway wrote itself meanwhile, drops the upstream request. Done once the
 * answer went out or was cut (a held error answer, which does not end: at once).
 */
export function forwardHttp(o: ForwardOptions): ForwardCall {
  const { req, res } = o;
  let resolveDone: (f: Forwarded) => void = () => undefined;
  const done = new Promise<Forwarded>((resolve) => {
    resolveDone = resolve;
  });
  if (res.destroyed || res.writableEnded) {
    resolveDone(ANSWERED);
    return { done, cancel: () => undefined };
  }
  let over = false;
  let answer: IncomingMessage | undefined;
  const out = send(o);
  /** Ends this forward: nothing more comes from upstream or is written to the client by it. */
  const end = (f: Forwarded): void => {
    if (over) return;
    over = true;
    answer?.destroy();
    out.destroy();
    resolveDone(f);
  };
  res.once("close", () => end(ANSWERED));
  out.once("response", (a: IncomingMessage) => {
    if (over) {
      a.destroy();
      return;
    }
    // the gateway answered itself meanwhile (its timeout): this answer is not wanted
    if (res.headersSent || res.writableEnded) {
      a.destroy();
      end(ANSWERED);
      return;
    }
    // a 407 from an HTTP proxy is about our credentials; through socks5 it is the site's
    if (a.statusCode === 407 && o.upstream.kind !== "socks") {
      a.resume();
      end({ kind: "refused", message: "the upstream proxy refused the credentials of its proxy URL (407)" });
      return;
    }
    answer = a;
    const status = a.statusCode ?? 0;
    const reason = a.statusMessage === undefined || BAD_REASON.test(a.statusMessage) ? undefined : a.statusMessage;
    try {
      res.writeHead(status < 100 || status > 999 ? OUT_OF_RANGE : status, reason, answeredHeaders(a.rawHeaders));
    } catch {
      // nothing Node would refuse should be left; never the process's end if something is
      res.destroy();
      end(ANSWERED);
      return;
    }
    // cut short by the upstream: the client's connection is cut too, never ended as if whole
    a.once("close", () => {
      if (!a.complete) res.destroy();
    });
    a.pipe(res);
  });
  out.on("error", (err: NodeJS.ErrnoException) => {
    if (over) return;
    if (answer !== undefined) {
      res.destroy();
      end(ANSWERED);
      return;
    }
    if (!res.headersSent && !res.writableEnded) {
      const failed = UPSTREAM_FAILED[err.code ?? ""] ?? OTHER_FAILURE;
      res.statusCode = failed.status;
      res.setHeader("content-type", "text/plain; charset=utf-8");
      res.end(failed.text);
    }
    end(ANSWERED);
  });
  req.pipe(out);
  return { done, cancel: () => end(ANSWERED) };
}

/** The request to the upstream proxy (or, through socks5, to the site). */
function send(o: ForwardOptions): ClientRequest {
  const { req, target, upstream } = o;
  const socks = upstream.kind === "socks";
  const headers = forwardedHeaders(req.rawHeaders, target.host, socks ? undefined : upstream.authorization);
  // a chunked body (decoded by the parser) goes on chunked again: unframed, its bytes would be
  // read upstream as the next request, one never checked
  if (req.headers["transfer-encoding"] !== undefined) headers.push("Transfer-Encoding", "chunked");
  // sites' answers are passed on as leniently as browsers read them
  const common = { method: req.method, headers, insecureHTTPParser: true };
  if (socks) {
    return httpRequest({ ...common, host: unbracketed(target.hostname), port: target.port, path: target.path, agent: upstream.agent });
  }
  const options = { ...common, host: upstream.host, port: upstream.port, path: target.href };
  return upstream.kind === "https"
    ? httpsRequest({ ...options, agent: o.agents.https })
    : httpRequest({ ...options, agent: o.agents.http });
}

/** A URL's hostname as a socket connects to it: an IPv6 address without its brackets. */
function unbracketed(hostname: string): string {
  return hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
}
