import type { Server } from "proxy-chain";
import type { Lease, LeaseOutcome } from "@proxybroker/sdk";

/** How long a CONNECT tunnel may hold its lease. */
export interface TunnelLimits {
  /** Closed after this long without a byte either way, ms. */
  readonly idleMs: number;
  /** Closed after this long in all, ms: a keep-alive connection cannot hold a proxy for ever. */
  readonly maxLifeMs: number;
  /**
   * A tunnel's lease whose pacing the broker does not know (`Lease.pacingUnknown`: no policy names
   * the host, no interval learned) is released this long after the tunnel closed, ms (0: at once;
   * default `UNKNOWN_INTERVAL_MS`). The site's answers are encrypted inside the tunnel, so the
   * gateway cannot report its 429s and adaptive pacing could never learn its limit: the pair is
   * spaced by this instead.
   */
  readonly unknownIntervalMs?: number;
}

/** The default of `TunnelLimits.unknownIntervalMs`: adaptive pacing's first step from 0 (a 429 raises it to 1 s). */
export const UNKNOWN_INTERVAL_MS = 1_000;

interface Tunnel {
  readonly lease: Lease;
  readonly opened: number;
  established: boolean;
  /** Why it failed, and whose failure that is (undefined: it did not). */
  failure: { readonly kind: "PROXY_ERROR" | "TARGET_ERROR"; readonly detail: string } | undefined;
  lastBytes: number;
  lastActive: number;
  readonly timer: NodeJS.Timeout;
  /** The client ended its side before the gateway ended its own (it went away). */
  clientLeft: boolean;
}

/** Resolves `ms` from now, or at once when `lease` is lost meanwhile (nothing left to space). */
function heldFor(lease: Lease, ms: number): Promise<void> {
  if (ms <= 0 || lease.signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      lease.signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    lease.signal.addEventListener("abort", done, { once: true });
  });
}

/** How often a tunnel's traffic is looked at for the idle limit. */
const CHECK_EVERY_MS = 250;

/** The answer to a CONNECT the upstream proxy did not answer in time (the connection closes). */
function timeoutAnswer(message: string): string {
  return `HTTP/1.1 504 Gateway Timeout\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(message)}\r\nconnection: close\r\n\r\n${message}`;
}

/** What `Tunnels` needs. */
export interface TunnelsOptions {
  /** The proxy server whose CONNECT tunnels these are. */
  readonly server: Server;
  readonly limits: TunnelLimits;
  /** How long the upstream proxy has to answer the CONNECT (the gateway's upstream timeout), ms. */
  readonly connectTimeoutMs: number;
  /** A tunnel closed with this outcome (metrics). */
  readonly onClosed?: (outcome: LeaseOutcome) => void;
}

/**
 * The CONNECT tunnels of the gateway and their leases: one lease per tunnel, for the tunnel's
 * host, renewed by the SDK's heartbeats while the tunnel is open; the tunnel is closed when idle,
 * too old, or when its lease is lost (the proxy may be another worker's then), and the lease is
 * released when the tunnel closes — SUCCESS when the upstream proxy opened it; PROXY_ERROR only
 * when the proxy itself failed: it refused the CONNECT (407, 403), or did not answer it within
 * `connectTimeoutMs` (the client gets a 504 then); TARGET_ERROR when it answered that it could not
 * reach the site (a 5xx: the site's failure, not the proxy's); ABANDONED when the client went away
 * before the tunnel opened. A tunnel that reached a site whose pacing the broker does not know
 * keeps its lease `unknownIntervalMs` more after it closed (see `TunnelLimits`).
 */
export class Tunnels {
  private readonly open_ = new Map<number, Tunnel>();
  private readonly releasing = new Set<Promise<void>>();
  /** Set while the gateway stops: a tunnel is closed once this long without a byte either way. */
  private quietMs: number | undefined;

  private readonly server: Server;
  private readonly limits: TunnelLimits;
  private readonly connectTimeoutMs: number;
  private readonly onClosed: (outcome: LeaseOutcome) => void;

  constructor(opts: TunnelsOptions) {
    const { server } = opts;
    this.server = server;
    this.limits = opts.limits;
    this.connectTimeoutMs = opts.connectTimeoutMs;
    this.onClosed = opts.onClosed ?? (() => undefined);
    server.on("tunnelConnectResponded", ({ customTag }: { customTag?: unknown }) => {
      const t = typeof customTag === "number" ? this.open_.get(customTag) : undefined;
      if (t !== undefined) t.established = true;
    });
    server.on("tunnelConnectFailed", ({ customTag, response }: { customTag?: unknown; response?: { statusCode?: number } }) => {
      const t = typeof customTag === "number" ? this.open_.get(customTag) : undefined;
      if (t === undefined) return;
      const status = response?.statusCode ?? 0;
      t.failure = {
        kind: status >= 500 ? "TARGET_ERROR" : "PROXY_ERROR",
        detail: `the upstream proxy answered ${status || "?"} to CONNECT`,
      };
    });
    server.on("connectionClosed", ({ connectionId }: { connectionId: number }) => this.close(connectionId));
  }

  get size(): number {
    return this.open_.size;
  }

  /** A CONNECT was granted `lease` on connection `id`. */
  open(id: number, lease: Lease): void {
    const now = Date.now();
    const timer = setInterval(() => this.check(id), CHECK_EVERY_MS);
    timer.unref();
    const tunnel: Tunnel = {
      lease,
      opened: now,
      established: false,
      failure: undefined,
      lastBytes: 0,
      lastActive: now,
      timer,
      clientLeft: false,
    };
    this.open_.set(id, tunnel);
    const socket = this.server.connections.get(id);
    socket?.once("end", () => {
      if (!socket.writableEnded) tunnel.clientLeft = true;
    });
    lease.signal.addEventListener("abort", () => this.server.closeConnection(id), { once: true });
  }

  /** The gateway stops: from now on a tunnel is closed once `quietMs` without a byte either way. */
  closeWhenQuiet(quietMs: number): void {
    this.quietMs = quietMs;
    for (const id of this.open_.keys()) this.check(id);
  }

  /** Wait for the releases of closed tunnels. */
  async drain(): Promise<void> {
    await Promise.all([...this.releasing]);
  }

  private check(id: number): void {
    const t = this.open_.get(id);
    if (t === undefined) return;
    const now = Date.now();
    if (!t.established && t.failure === undefined && now - t.opened >= this.connectTimeoutMs) {
      // the upstream proxy took the connection and never answered the CONNECT
      t.failure = { kind: "PROXY_ERROR", detail: `the upstream proxy did not answer the CONNECT within ${this.connectTimeoutMs} ms` };
      const socket = this.server.connections.get(id);
      if (socket === undefined || socket.destroyed) {
        this.server.closeConnection(id);
        return;
      }
      socket.end(timeoutAnswer(t.failure.detail), () => socket.destroy());
      return;
    }
    const stats = this.server.getConnectionStats(id);
    const bytes = stats === undefined ? 0 : (stats.srcRxBytes ?? 0) + (stats.srcTxBytes ?? 0);
    if (bytes !== t.lastBytes) {
      t.lastBytes = bytes;
      t.lastActive = now;
    }
    const idleMs = Math.min(this.limits.idleMs, this.quietMs ?? Number.POSITIVE_INFINITY);
    if (now - t.lastActive >= idleMs || now - t.opened >= this.limits.maxLifeMs) this.server.closeConnection(id);
  }

  private close(id: number): void {
    const t = this.open_.get(id);
    if (t === undefined) return;
    this.open_.delete(id);
    clearInterval(t.timer);
    const outcome: LeaseOutcome =
      t.failure !== undefined
        ? t.failure
        : t.established
          ? { kind: "SUCCESS", latencyMs: Date.now() - t.opened, bytes: t.lastBytes }
          : t.clientLeft
            ? { kind: "ABANDONED", detail: "the client went away before the tunnel opened" }
            : { kind: "PROXY_ERROR", detail: "the tunnel through the upstream proxy did not open" };
    this.onClosed(outcome);
    // the tunnel reached the site: spaced by the gateway when the broker does not pace the pair
    const spaceMs = outcome.kind === "SUCCESS" && t.lease.pacingUnknown ? (this.limits.unknownIntervalMs ?? UNKNOWN_INTERVAL_MS) : 0;
    const p = heldFor(t.lease, spaceMs)
      .then(() => t.lease.release(outcome))
      .catch(() => undefined);
    this.releasing.add(p);
    void p.finally(() => this.releasing.delete(p));
  }
}
