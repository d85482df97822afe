import type { IncomingMessage, ServerResponse } from "node:http";
import { finished } from "node:stream/promises";
import { RequestError, Server } from "proxy-chain";
import type { PrepareRequestFunctionOpts, PrepareRequestFunctionResult } from "proxy-chain";
import type { LeaseOutcome, ProxyBrokerClient } from "@proxybroker/sdk";
import type { TokenTable } from "../security/tokens.js";
import { browserWithoutCredentials, WarnEvery, type CredentialsMode } from "./credentials.js";
import { authRefusal, RefusalError, refusalOf } from "./answers.js";
import type { Refusal } from "./answers.js";
import type { Taken } from "./outcome.js";
import { ParamsError, paramsFromUsername } from "./params.js";
import type { GatewayParams } from "./params.js";
import { ConnectPorts, type TargetPolicy } from "./targets.js";
import { FailingTargets } from "./failing-targets.js";
import { UpstreamAgents } from "./upstream-agents.js";
import { Tunnels } from "./tunnels.js";
import { GatewayMetrics } from "./metrics.js";
import type { RequestKind } from "./metrics.js";
import type { HostCerts } from "./host-certs.js";
import { Interceptor, upstreamAgent } from "./intercept.js";
import { serveIntercepted } from "./intercepted.js";
import { serveUpgrade } from "./upgrade.js";
import type { TunnelLimits } from "./tunnels.js";
import { KeptLeases } from "./kept-leases.js";
import { PlainHttp, UPSTREAM_HTTP, UPSTREAM_HTTPS } from "./plain-http.js";

export { LEASE_HEADERS } from "./outcome.js";

const REALM = "proxybroker";
/** CONNECT to 443 only, unless the options say otherwise. */
const HTTPS_ONLY = new ConnectPorts();
/** While the gateway stops: a CONNECT tunnel this long without a byte either way is closed. */
const TUNNEL_QUIET_MS = 500;
/** An intercepted pair's upstream connection kept this long after its last request, at most so many. */
const UPSTREAM_IDLE_MS = 30_000;
const UPSTREAM_AGENTS_MAX = 4_096;
/** While the gateway stops, after the last request: how long connections get to end before they are cut. */
const END_CONNECTIONS_MS = 500;

export interface GatewayOptions {
  readonly host: string;
  /** 0 picks a free port (`address` says which). */
  readonly port: number;
  /** The SDK client of a pool (one per pool, made on first use). */
  readonly client: (pool: string) => ProxyBrokerClient;
  readonly pool: string;
  readonly targets: TargetPolicy;
  /** The ports a CONNECT may reach (default: 443 only). */
  readonly connectPorts?: ConnectPorts;
  /** Client tokens (the proxy password); undefined: no credentials asked (loopback only). */
  readonly tokens: TokenTable | undefined;
  /**
   * "required": a request without proxy credentials is answered 407 with a challenge, so that
   * browsers send their username (and its parameters); any password will do without tokens.
   * "optional" (default): such a request is served without parameters. With tokens, required.
   */
  readonly credentials?: CredentialsMode;
  /**
   * Told (at most once a minute) that a browser sent no proxy credentials to a gateway that does
   * not ask for them: its session and other parameters, if it had any, never arrived.
   */
  readonly onBrowserWithoutCredentials?: (userAgent: string) => void;
  /** The wait for a proxy when a request names none, and the most one may ask for, ms. */
  readonly waitMs: number;
  readonly maxWaitMs: number;
  readonly tunnels: TunnelLimits;
  /** Connections open at once, at most. */
  readonly maxConnections: number;
  /** Time for a client to send a request's head and whole request, ms. */
  readonly requestTimeoutMs: number;
  /** Time for the site's answer to start (and, intercepted, between two of its chunks), ms. */
  readonly upstreamTimeoutMs: number;
  /**
   * Interception: TLS of CONNECT tunnels ends here with certificates from `certs`, and each request
   * inside gets its own lease; `upstreamCa` adds CAs to trust for the sites. Unset: tunnel mode.
   */
  readonly intercept?: { readonly certs: HostCerts; readonly upstreamCa: readonly string[] | undefined };
  /**
   * Kept leases (kept-leases.ts): a reusable lease is kept idle at most `idleMs` for the next
   * request of its host (0: never kept), and at most `maxMs` after it was first kept. Default: not kept.
   */
  readonly keep?: { readonly idleMs: number; readonly maxMs: number };
}

/**
 * The lease-aware HTTP(S) forward proxy (docs/gateway.md). proxy-chain listens and serves
 * CONNECT: a tunnel holds one lease for its host while it is open (renewed by the SDK's
 * heartbeats), closed when idle or too old, and released when it closes, or, intercepted, each
 * request inside gets its own. Plain HTTP is served by `PlainHttp` (plain-http.ts): a lease per
 * request (or a kept one), forwarded, watched and released with what came back.
 */
export class Gateway {
  private readonly server: Server;
  private readonly browserWarning = new WarnEvery(60_000);
  /** Reusable leases kept idle for the next request of their host. */
  private readonly kept: KeptLeases;
  /** Hosts that just failed through two proxies: not tried for a while (failing-targets.ts). */
  private readonly failing = new FailingTargets({ forMs: 30_000 });
  private readonly tunnels: Tunnels;
  private readonly plain: PlainHttp;
  /** Requests by kind and outcome, open tunnels, the time added (see metrics.ts). */
  readonly metrics: GatewayMetrics;
  private readonly interceptor: Interceptor | undefined;
  /** Intercepted requests' upstream connections, kept per (proxy, site) between the pair's leases. */
  private readonly agents: UpstreamAgents;
  /** Plain-HTTP and intercepted requests being served, until their answer went out. */
  private inFlight = 0;
  /** Set by the first `stop`; later calls may only bring the end of the drain closer. */
  private stopping: Promise<void> | undefined;
  private drainUntil = 0;

  constructor(private readonly opts: GatewayOptions) {
    this.server = new Server({
      host: opts.host,
      port: opts.port,
      authRealm: REALM,
      prepareRequestFunction: (o) => this.prepare(o),
    });
    this.tunnels = new Tunnels({
      server: this.server,
      limits: opts.tunnels,
      connectTimeoutMs: opts.upstreamTimeoutMs,
      onClosed: (outcome) => this.metrics.done("tunnel", outcome.kind),
    });
    this.kept = new KeptLeases({ idleMs: opts.keep?.idleMs ?? 0, maxMs: opts.keep?.maxMs ?? 0 });
    this.metrics = new GatewayMetrics({ openTunnels: () => this.tunnels.size, keptLeases: () => this.kept.size });
    const intercept = opts.intercept;
    this.agents = new UpstreamAgents({
      make: (proxyUrl) => upstreamAgent(proxyUrl, intercept?.upstreamCa),
      idleMs: UPSTREAM_IDLE_MS,
      max: UPSTREAM_AGENTS_MAX,
    });
    // what a request inside an intercepted tunnel needs, plain or an upgrade (made once)
    const inside = {
      lease: (params: GatewayParams, url: string, host: string, port: number) => this.lease(params, url, host, port, "intercepted"),
      upstreamTimeoutMs: opts.upstreamTimeoutMs,
      done: (outcome: string) => this.metrics.done("intercepted", outcome),
      finish: (taken: Taken, outcome: LeaseOutcome) => this.kept.finish(taken.keepKey, taken, outcome),
    };
    this.interceptor =
      intercept === undefined
        ? undefined
        : new Interceptor(
            intercept.certs,
            (req, res, target) => this.track(res, serveIntercepted({ ...inside, agents: this.agents }, req, res, target)),
            (req, socket, head, target) => serveUpgrade({ ...inside, upstreamCa: intercept.upstreamCa }, req, socket, head, target),
          );
    const http = this.server.server;
    http.maxConnections = opts.maxConnections;
    http.requestTimeout = opts.requestTimeoutMs;
    http.headersTimeout = Math.min(opts.requestTimeoutMs, 60_000);
    this.plain = new PlainHttp({
      admit: (req, username, password) => this.admit(req, username, password, "http"),
      lease: (params, target, hostname, port) => this.lease(params, target, hostname, port, "http"),
      kept: this.kept,
      metrics: this.metrics,
      failing: this.failing,
      upstreamTimeoutMs: opts.upstreamTimeoutMs,
    });
    // plain HTTP goes through our listener, not proxy-chain's
    http.removeAllListeners("request");
    http.on("request", (req: IncomingMessage, res: ServerResponse) => void this.track(res, this.plain.serve(req, res)));
  }

  /** `host:port` once listening. */
  get address(): string {
    return `${this.opts.host.includes(":") ? `[${this.opts.host}]` : this.opts.host}:${this.server.port}`;
  }

  get openTunnels(): number {
    return this.tunnels.size;
  }

  async start(): Promise<void> {
    await this.server.listen();
    this.agents.start();
  }

  /**
   * Stop. No new connections from now on; with `graceMs`, the requests in flight (plain HTTP and
   * intercepted, also new ones on connections already open) are served to their end and released,
   * and CONNECT tunnels are closed once quiet, for at most `graceMs`; then every connection still
   * open is closed (tunnel leases are released as they close). A later call may only shorten the
   * drain (a second signal: `stop(0)` closes everything now); every call resolves when stopped.
   */
  stop(graceMs = 0): Promise<void> {
    const until = Date.now() + Math.max(0, graceMs);
    this.drainUntil = this.stopping === undefined ? until : Math.min(this.drainUntil, until);
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    // stops listening now (and closes idle keep-alive connections); resolves once every connection closed
    const closed = this.server.close(false).catch(() => undefined);
    const draining = this.drainUntil > Date.now();
    if (draining) this.tunnels.closeWhenQuiet(TUNNEL_QUIET_MS);
    while ((this.inFlight > 0 || this.tunnels.size > 0) && Date.now() < this.drainUntil) await sleep(25);
    await this.kept.close();
    if (draining) {
      // the answers went out: let the connections end (their last bytes flushed) before they are cut
      const open = [...this.server.connections.values()];
      for (const socket of open) socket.end();
      const until = Math.min(this.drainUntil, Date.now() + END_CONNECTIONS_MS);
      while (open.some((socket) => !socket.destroyed) && Date.now() < until) await sleep(25);
    }
    this.interceptor?.close();
    this.server.closeConnections();
    await closed;
    await this.tunnels.drain();
    await this.agents.closeAll();
  }

  /** Count a request as in flight until it was served and its answer went out. */
  private track(res: ServerResponse, serving: Promise<void>): Promise<void> {
    this.inFlight++;
    // the answer has usually gone out when serving ends: no listener on `res` then (it has many)
    return serving
      .then(() => (res.writableFinished || res.destroyed ? undefined : finished(res).catch(() => undefined)))
      .finally(() => {
        this.inFlight--;
      });
  }

  /** Count a browser that sent no credentials; say so at most once a minute. */
  private browserWithoutCredentials(userAgent: string): void {
    this.metrics.browserWithoutCredentials();
    if (this.browserWarning.due()) this.opts.onBrowserWithoutCredentials?.(userAgent);
  }

  /**
   * Who asks, and with what: the gateway token (when tokens are set), the credentials a browser
   * must send, the username's parameters. Throws RefusalError (407).
   */
  private admit(request: IncomingMessage, username: string, password: string, kind: RequestKind): GatewayParams {
    if (this.opts.tokens !== undefined && (password === "" || this.opts.tokens.lookup(password) === undefined)) {
      this.metrics.done(kind, "refused_407");
      throw new RefusalError(authRefusal("proxy credentials required: the password is a gateway token", REALM));
    }
    if (request.headers["proxy-authorization"] === undefined) {
      if (this.opts.credentials === "required") {
        this.metrics.done(kind, "refused_407");
        throw new RefusalError(
          authRefusal("proxy credentials required: the username carries the parameters (empty: none), any password", REALM),
        );
      }
      if (browserWithoutCredentials(request.headers)) this.browserWithoutCredentials(String(request.headers["user-agent"]));
    }
    try {
      return paramsFromUsername(username);
    } catch (err) {
      this.metrics.done(kind, "refused_407");
      throw new RefusalError(authRefusal(err instanceof ParamsError ? err.message : "malformed proxy username", REALM));
    }
  }

  /** A CONNECT (proxy-chain asks): its tunnel's lease, or the interceptor that ends its TLS here. */
  private async prepare(o: PrepareRequestFunctionOpts): Promise<PrepareRequestFunctionResult> {
    const { request, username, password, hostname, port, connectionId } = o;
    try {
      const params = this.admit(request, username, password, "tunnel");
      const refused = (this.opts.connectPorts ?? HTTPS_ONLY).refusal(port);
      if (refused !== undefined) {
        this.metrics.done("tunnel", "refused_403");
        throw new RefusalError({ status: 403, message: refused, headers: {} });
      }
      // the target checked is the target forwarded: the authority is rebuilt from what was parsed
      request.url = `${hostname}:${port}`;
      if (this.interceptor !== undefined) {
        // TLS ends here: each request inside the tunnel gets its own lease (serveIntercepted)
        const denied = await this.opts.targets.refusal(hostname, port);
        if (denied !== undefined) throw new RefusalError({ status: 403, message: denied, headers: {} });
        return { customConnectServer: this.interceptor.serverFor({ host: hostname, port, params }) };
      }
      const { lease } = await this.lease(params, hostname, hostname, port, "tunnel");
      this.tunnels.open(connectionId, lease);
      return { upstreamProxyUrl: lease.proxy.url, customTag: connectionId, httpAgent: UPSTREAM_HTTP, httpsAgent: UPSTREAM_HTTPS };
    } catch (err) {
      throw requestError(err instanceof RefusalError ? err.refusal : refusalOf(err));
    }
  }

  /** A lease for `target` (a URL or a host) with the request's parameters; throws `RefusalError` or the SDK's error. */
  private async lease(params: GatewayParams, target: string, hostname: string, port: number, kind: RequestKind): Promise<Taken> {
    const started = performance.now();
    try {
      const refused = await this.opts.targets.refusal(hostname, port);
      if (refused !== undefined) throw new RefusalError({ status: 403, message: refused, headers: {} });
      const failing = this.failing.refusal(hostname);
      if (failing !== undefined) throw new RefusalError({ status: 502, message: failing, headers: {} });
      const pool = params.pool ?? this.opts.pool;
      const client = this.opts.client(pool);
      // a CONNECT tunnel holds its lease while open: never kept
      const keepKey =
        kind === "tunnel" || (this.opts.keep?.idleMs ?? 0) <= 0
          ? undefined
          : KeptLeases.keyOf({ pool, host: hostname, port, session: params.session, tier: params.tier, labels: params.labels });
      const kept = keepKey === undefined ? undefined : this.kept.take(keepKey);
      if (kept !== undefined) {
        this.metrics.leased(kind, (performance.now() - started) / 1_000, true);
        return kept;
      }
      const lease = await client.acquire(target, {
        maxWaitMs: Math.min(params.maxWaitMs ?? this.opts.waitMs, this.opts.maxWaitMs),
        ...(params.session === undefined ? {} : { sessionKey: params.session }),
        ...(params.tier === undefined ? {} : { tier: params.tier }),
        labels: params.labels,
        ...(keepKey === undefined ? {} : { reuse: true }),
      });
      this.metrics.leased(kind, (performance.now() - started) / 1_000);
      return keepKey === undefined ? { lease, client } : { lease, client, keepKey };
    } catch (err) {
      this.metrics.done(kind, `refused_${(err instanceof RefusalError ? err.refusal : refusalOf(err)).status}`);
      throw err;
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function requestError(r: Refusal): RequestError {
  return new RequestError(r.message, r.status, { ...r.headers });
}
