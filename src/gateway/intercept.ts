import { createServer } from "node:http";
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { TLSSocket } from "node:tls";
import { ProxyAgent, Socks5ProxyAgent, request } from "undici";
import type { Dispatcher } from "undici";
import type { HostCerts } from "./host-certs.js";
import type { GatewayParams } from "./params.js";
import { HOP_BY_HOP } from "./hop-by-hop.js";

/** What a CONNECT asked for: the tunnel's host and port, and the parameters of its username. */
export interface TunnelTarget {
  readonly host: string;
  readonly port: number;
  readonly params: GatewayParams;
}

/**
 * TLS interception: a CONNECT tunnel ends at the gateway (a certificate for its host, signed by
 * the operator's CA), and each request inside it comes to `handle` on its own, with the tunnel's
 * target — so that each gets its own lease, pacing and classification as a plain-HTTP request.
 */
export class Interceptor {
  private readonly http: Server;
  private readonly targets = new WeakMap<Socket, TunnelTarget>();
  private readonly sockets = new Set<Socket>();

  constructor(
    private readonly certs: HostCerts,
    handle: (req: IncomingMessage, res: ServerResponse, target: TunnelTarget) => Promise<void>,
    /** An `Upgrade` request (a WebSocket) inside a tunnel: the socket is the handler's from now on. */
    upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer, target: TunnelTarget) => Promise<void>,
  ) {
    this.http = createServer((req, res) => {
      const target = this.targets.get(req.socket);
      if (target === undefined) {
        res.writeHead(400, { "content-type": "text/plain" }).end("no tunnel for this request");
        return;
      }
      void handle(req, res, target);
    });
    this.http.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const target = this.targets.get(req.socket);
      if (target === undefined || upgrade === undefined) {
        socket.end("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
      }
      void upgrade(req, socket, head, target);
    });
  }

  /**
   * A server for proxy-chain's `customConnectServer`: proxy-chain answers the CONNECT with 200 and
   * hands it the client's socket, where TLS is ended for `target`.
   */
  serverFor(target: TunnelTarget): Server {
    const relay = createServer();
    relay.removeAllListeners("connection");
    relay.on("connection", (raw: Socket) => {
      const tls = new TLSSocket(raw, {
        isServer: true,
        secureContext: this.certs.contextFor(target.host),
        SNICallback: (name, done) => done(null, this.certs.contextFor(name)),
      });
      tls.on("error", () => raw.destroy());
      this.targets.set(tls, target);
      this.sockets.add(tls);
      tls.once("close", () => this.sockets.delete(tls));
      this.http.emit("connection", tls);
    });
    return relay;
  }

  /** Close every intercepted connection. */
  close(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }
}

/**
 * The dispatcher that sends a request through an upstream proxy (http, https or socks5),
 * verifying the site's TLS: Node's CAs, and `ca` on top for http(s) upstreams.
 */
export function upstreamAgent(proxyUrl: string, ca: readonly string[] | undefined): Dispatcher {
  if (proxyUrl.startsWith("socks")) return new Socks5ProxyAgent(proxyUrl);
  return new ProxyAgent({ uri: proxyUrl, ...(ca === undefined ? {} : { requestTls: { ca: [...ca] } }) });
}

/** The request's headers for the site: hop-by-hop and proxy headers dropped. */
export function forwardHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
  }
  return out;
}

/** The site's answer headers for the client, hop-by-hop dropped. */
export function answerHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
  }
  return out;
}

/** No answer (its status and headers) came from the site through the proxy within the upstream timeout. */
export class UpstreamTimeoutError extends Error {
  override readonly name = "UpstreamTimeoutError";
}

/**
 * Send `req` to `url` through `agent`; resolves with the site's answer (its body still to read).
 * `signal` (the lease's) aborts it at any time; until the answer's head has come, so does
 * `timeoutMs` (the proxy's CONNECT included, which undici's own timeouts do not cover), with an
 * `UpstreamTimeoutError`; after it, a body silent for `timeoutMs` fails. The caller destroys
 * `agent` when done with it.
 */
export async function sendUpstream(
  url: string,
  req: IncomingMessage,
  agent: Dispatcher,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<Dispatcher.ResponseData> {
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  const ac = new AbortController();
  const onLost = (): void => ac.abort(signal.reason);
  if (signal.aborted) onLost();
  else signal.addEventListener("abort", onLost, { once: true });
  const timer = setTimeout(() => ac.abort(new UpstreamTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
  // undici reads an abort only once the proxy's CONNECT answered: a proxy that never answers is
  // raced here (the caller destroys the agent, which ends the request left behind)
  const aborted = new Promise<never>((_, reject) => {
    if (ac.signal.aborted) reject(ac.signal.reason);
    else ac.signal.addEventListener("abort", () => reject(ac.signal.reason), { once: true });
  });
  aborted.catch(() => undefined);
  const sent = request(url, {
    method: (req.method ?? "GET") as Dispatcher.HttpMethod,
    headers: forwardHeaders(req.headers),
    ...(hasBody ? { body: req } : {}),
    dispatcher: agent,
    signal: ac.signal,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  sent.catch(() => undefined);
  try {
    const up = await Promise.race([sent, aborted]);
    // the body goes on under the lease's signal alone (ac follows it)
    up.body.once("close", () => signal.removeEventListener("abort", onLost));
    return up;
  } catch (err) {
    signal.removeEventListener("abort", onLost);
    throw ac.signal.reason instanceof UpstreamTimeoutError ? ac.signal.reason : err;
  } finally {
    clearTimeout(timer);
  }
}
