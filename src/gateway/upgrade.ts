/**
 * A WebSocket (or any `Upgrade`) request inside an intercepted tunnel (docs/gateway.md): one lease
 * for the socket's whole life, renewed by the SDK's heartbeats and released when either side
 * closes. The upgrade request goes to the site through the leased proxy — a CONNECT there, TLS to
 * the site verified — and from the site's answer on, bytes are piped both ways untouched. A lost
 * lease closes the socket (the proxy may be another worker's then).
 */
import { request as httpRequest } from "node:http";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { connect as tlsConnect, rootCertificates } from "node:tls";
import type { TLSSocket } from "node:tls";
import type { LeaseOutcome } from "@proxybroker/sdk";
import { RefusalError, refusalOf } from "./answers.js";
import type { Refusal } from "./answers.js";
import type { TunnelTarget } from "./intercept.js";
import type { Taken } from "./outcome.js";
import type { GatewayParams } from "./params.js";
import { tunnelRequest } from "./tunnel-request.js";

export interface UpgradeDeps {
  readonly lease: (params: GatewayParams, url: string, host: string, port: number) => Promise<Taken>;
  readonly upstreamCa: readonly string[] | undefined;
  readonly upstreamTimeoutMs: number;
  /** The socket's lease ended with this outcome (metrics). */
  readonly done: (outcome: string) => void;
}

/** Headers never sent on to the site: the client's proxy headers and the gateway's parameters. */
const DROPPED = new Set(["proxy-authorization", "proxy-connection"]);

export async function serveUpgrade(
  deps: UpgradeDeps,
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  target: TunnelTarget,
): Promise<void> {
  const asked = tunnelRequest(req, target);
  if ("refused" in asked) {
    refuse(client, asked.refused);
    return;
  }
  const { params, url } = asked;
  let taken: Taken;
  try {
    taken = await deps.lease(params, url, target.host, target.port);
  } catch (err) {
    refuse(client, err instanceof RefusalError ? err.refusal : refusalOf(err));
    return;
  }
  const { lease } = taken;
  const started = Date.now();
  let site: TLSSocket;
  try {
    site = await tunnelTo({
      proxyUrl: lease.proxy.url,
      host: target.host,
      port: target.port,
      ca: deps.upstreamCa,
      timeoutMs: deps.upstreamTimeoutMs,
    });
  } catch (err) {
    const outcome: LeaseOutcome = { kind: "PROXY_ERROR", detail: err instanceof Error ? err.message : String(err) };
    deps.done(outcome.kind);
    await lease.release(outcome).catch(() => undefined);
    refuse(client, { status: 502, message: `the WebSocket through proxy ${lease.proxy.id} failed: ${outcome.detail ?? ""}`, headers: {} });
    return;
  }
  site.write(requestHead(req));
  if (head.length > 0) site.write(head);
  site.pipe(client);
  client.pipe(site);
  let bytes = 0;
  site.on("data", (d: Buffer) => (bytes += d.length));
  const lost = (): void => {
    site.destroy();
    client.destroy();
  };
  lease.signal.addEventListener("abort", lost, { once: true });
  await new Promise<void>((resolve) => {
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      site.destroy();
      client.destroy();
      resolve();
    };
    site.once("close", end);
    client.once("close", end);
    site.on("error", end);
    client.on("error", end);
  });
  lease.signal.removeEventListener("abort", lost);
  const outcome: LeaseOutcome = lease.signal.aborted ? { kind: "ABANDONED" } : { kind: "SUCCESS", latencyMs: Date.now() - started, bytes };
  deps.done(outcome.kind);
  await lease.release(outcome).catch(() => undefined);
}

/** The upgrade request as the site gets it: its request line and headers, proxy headers dropped. */
function requestHead(req: IncomingMessage): string {
  const lines = [`${req.method ?? "GET"} ${req.url ?? "/"} HTTP/1.1`];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? "";
    if (!DROPPED.has(name.toLowerCase())) lines.push(`${name}: ${req.rawHeaders[i + 1] ?? ""}`);
  }
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** A TLS connection to `host:port` through the HTTP(S) proxy at `proxyUrl` (a CONNECT there). */
function tunnelTo(o: {
  readonly proxyUrl: string;
  readonly host: string;
  readonly port: number;
  readonly ca: readonly string[] | undefined;
  readonly timeoutMs: number;
}): Promise<TLSSocket> {
  const proxy = new URL(o.proxyUrl);
  if (proxy.protocol !== "http:") return Promise.reject(new Error(`a WebSocket goes through http proxies only, not ${proxy.protocol}`));
  const authority = `${o.host.includes(":") ? `[${o.host}]` : o.host}:${o.port}`;
  const auth =
    proxy.username === ""
      ? {}
      : {
          "proxy-authorization": `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString("base64")}`,
        };
  return new Promise((resolve, reject) => {
    const connect = httpRequest({
      host: proxy.hostname,
      port: Number(proxy.port || 80),
      method: "CONNECT",
      path: authority,
      headers: { host: authority, ...auth },
    });
    const timer = setTimeout(() => connect.destroy(new Error(`the proxy did not open the tunnel within ${o.timeoutMs} ms`)), o.timeoutMs);
    connect.once("connect", (res, socket) => {
      clearTimeout(timer);
      if (res.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`the proxy answered ${res.statusCode ?? "?"} to CONNECT`));
        return;
      }
      const tls = tlsConnect({ socket, servername: o.host, ...(o.ca === undefined ? {} : { ca: [...rootCertificates, ...o.ca] }) });
      tls.once("secureConnect", () => resolve(tls));
      tls.once("error", reject);
    });
    connect.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    connect.end();
  });
}

/** An answer written straight to the client's socket (nothing was upgraded), and the socket closed. */
function refuse(client: Duplex, r: Refusal): void {
  const body = Buffer.from(r.message);
  const headers = Object.entries({
    ...r.headers,
    "content-type": "text/plain; charset=utf-8",
    "content-length": String(body.length),
    connection: "close",
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  client.end(`HTTP/1.1 ${r.status} ${r.status === 502 ? "Bad Gateway" : "Refused"}\r\n${headers}\r\n${body.toString()}`);
}
