/**
 * Internal to the in-memory engine: exit IPs (G9, store-semantics §exit IPs). Per proxy what the
 * health checks showed of its exit (`probed`, the former exit and until when it counts) and
 * whether another proxy of the pool has its host; per exit its members (proxy id → until: a
 * current member forever, a former one until its `formerUntil`). A proxy's siblings are the
 * other members of its exit, and of its former exit while that counts, live at the moment asked.
 */

/** How long a former exit still counts after a change: leases granted under it may still run. */
export const FORMER_EXIT_MS = 3_600_000;

/** A member that stays until it changes exit. */
const FOREVER = Number.POSITIVE_INFINITY;

/** What the pool knows of one proxy's exit. */
export interface ProxyExit {
  /** The exit the last health check showed ("" = not known). */
  exitIp: string;
  /** The exit before the last change ("" = none) … */
  formerExit: string;
  /** … which counts until then. */
  formerUntil: number;
  /** A health check got an answer through the proxy (pass or fail). */
  probed: boolean;
  /** Another proxy of the pool has the same host. */
  sharesHost: boolean;
}

/** A change of a proxy's exit, as recorded. */
export interface ExitChange {
  readonly proxyId: string;
  /** "" when the exit was not known before. */
  readonly from: string;
  readonly to: string;
}

/**
 * The host of a proxy id: the part after the last "@" (`user@host:port`), before the port (the
 * last ":"; an IPv6 host is bracketed, `[::1]:port`).
 */
export function hostOf(id: string): string {
  const rest = id.slice(id.lastIndexOf("@") + 1);
  const colon = rest.lastIndexOf(":");
  if (colon < 0 || colon < rest.lastIndexOf("]")) return rest;
  return rest.slice(0, colon);
}

/** The exits of one pool. */
export class ExitBook {
  private readonly proxies = new Map<string, ProxyExit>();
  /** Host → the pool's proxies on it. */
  private readonly hosts = new Map<string, Set<string>>();
  /** Exit → proxy id → until when it is a member. */
  private readonly members = new Map<string, Map<string, number>>();
  /** Proxies that share their host and have not been seen by a probe, nor shown an exit. */
  private awaiting = 0;
  /** Memberships of exits with two members or more: how many proxies a sibling may hold back. */
  private withSiblings = 0;

  /** What is known of the proxy's exit; undefined for an id the pool does not have. */
  of(proxyId: string): Readonly<ProxyExit> | undefined {
    return this.proxies.get(proxyId);
  }

  /** Whether some exit may have two members: without one, no proxy has a sibling. */
  get anyShared(): boolean {
    return this.withSiblings > 0;
  }

  /**
   * How many proxies may be held back by a sibling (members of exits with two members or more):
   * the busy index does not show them, so the acquire's band widens by them.
   */
  get siblingMembers(): number {
    return this.withSiblings;
  }

  /** Whether some proxy waits for its first probe (see `awaitsProbe`). */
  get anyAwaiting(): boolean {
    return this.awaiting > 0;
  }

  /** A proxy shares its host, has not been seen by a probe and has no known exit. */
  awaitsProbe(proxyId: string): boolean {
    const p = this.proxies.get(proxyId);
    return p !== undefined && awaits(p);
  }

  /** A new proxy of the pool: it and the pool's other proxies on its host share it. */
  add(proxyId: string): void {
    if (this.proxies.has(proxyId)) return;
    const p: ProxyExit = { exitIp: "", formerExit: "", formerUntil: 0, probed: false, sharesHost: false };
    this.proxies.set(proxyId, p);
    const host = hostOf(proxyId);
    let on = this.hosts.get(host);
    if (on === undefined) {
      on = new Set();
      this.hosts.set(host, on);
    }
    on.add(proxyId);
    if (on.size < 2) return;
    for (const id of on) this.update(id, (q) => (q.sharesHost = true));
  }

  /**
   * A proxy leaves the pool at `now`: the last one left on its host no longer shares it, and it
   * stays a member of its exits until a former exit's time (its leases may still run).
   */
  remove(proxyId: string, now: number): void {
    const p = this.proxies.get(proxyId);
    if (p === undefined) return;
    this.update(proxyId, (q) => (q.sharesHost = false));
    this.proxies.delete(proxyId);
    const host = hostOf(proxyId);
    const on = this.hosts.get(host);
    on?.delete(proxyId);
    if (on !== undefined && on.size === 1) for (const id of on) this.update(id, (q) => (q.sharesHost = false));
    if (on !== undefined && on.size === 0) this.hosts.delete(host);
    if (p.exitIp !== "") this.join(p.exitIp, proxyId, now + FORMER_EXIT_MS);
  }

  /** A health check answered through the proxy (pass or fail). */
  probed(proxyId: string): void {
    this.update(proxyId, (q) => (q.probed = true));
  }

  /**
   * The exit a health check showed at `now`: a change (or the first exit learned) is recorded and
   * answered; the same exit, or "", changes nothing (undefined).
   */
  showed(proxyId: string, exitIp: string, now: number): ExitChange | undefined {
    const p = this.proxies.get(proxyId);
    if (p === undefined || exitIp === "" || exitIp === p.exitIp) return undefined;
    const from = p.exitIp;
    this.update(proxyId, (q) => {
      if (from !== "") {
        q.formerExit = from;
        q.formerUntil = now + FORMER_EXIT_MS;
      }
      q.exitIp = exitIp;
    });
    if (from !== "") this.join(from, proxyId, now + FORMER_EXIT_MS);
    this.join(exitIp, proxyId, FOREVER);
    return { proxyId, from, to: exitIp };
  }

  /**
   * The key of the set of exits that count for the proxy at `now` (its exit, and its former one
   * while that counts): proxies with one key have the same members (themselves included).
   * Undefined: no known exit.
   */
  exitKey(proxyId: string, now: number): string | undefined {
    const p = this.proxies.get(proxyId);
    if (p === undefined || p.exitIp === "") return undefined;
    return p.formerExit !== "" && p.formerUntil > now ? `${p.exitIp}\n${p.formerExit}` : p.exitIp;
  }

  /** The other members of the proxy's exit, and of its former exit while it counts, live at `now`. */
  siblingsOf(proxyId: string, now: number): string[] {
    const p = this.proxies.get(proxyId);
    if (p === undefined || p.exitIp === "") return [];
    const out: string[] = [];
    this.collect(p.exitIp, proxyId, now, out);
    if (p.formerExit === "" || p.formerUntil <= now) return out;
    const current = new Set(out);
    const former: string[] = [];
    this.collect(p.formerExit, proxyId, now, former);
    for (const id of former) if (!current.has(id)) out.push(id);
    return out;
  }

  /** The members of `exit` but `self` live at `now` into `out`; those whose time is up leave. */
  private collect(exit: string, self: string, now: number, out: string[]): void {
    const of = this.members.get(exit);
    if (of === undefined) return;
    for (const [id, until] of of) {
      if (until <= now) this.leave(exit, id);
      else if (id !== self) out.push(id);
    }
  }

  /** Make `proxyId` a member of `exit` until `until`. */
  private join(exit: string, proxyId: string, until: number): void {
    let of = this.members.get(exit);
    if (of === undefined) {
      of = new Map();
      this.members.set(exit, of);
    }
    const before = of.size;
    of.set(proxyId, until);
    if (of.size > before) this.withSiblings += of.size === 2 ? 2 : of.size > 2 ? 1 : 0;
  }

  private leave(exit: string, proxyId: string): void {
    const of = this.members.get(exit);
    if (of === undefined || !of.delete(proxyId)) return;
    this.withSiblings -= of.size === 1 ? 2 : of.size > 1 ? 1 : 0;
    if (of.size === 0) this.members.delete(exit);
  }

  /** Change a proxy's record, keeping the count of awaiting proxies. */
  private update(proxyId: string, change: (p: ProxyExit) => void): void {
    const p = this.proxies.get(proxyId);
    if (p === undefined) return;
    const was = awaits(p);
    change(p);
    const is = awaits(p);
    if (was !== is) this.awaiting += is ? 1 : -1;
  }
}

function awaits(p: ProxyExit): boolean {
  return p.sharesHost && !p.probed && p.exitIp === "";
}
