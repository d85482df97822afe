import { BlockList, isIP } from "node:net";
import { lookup } from "node:dns/promises";
import { networkInterfaces } from "node:os";
import { splitHostPort } from "./address.js";
import { RefusalError } from "./answers.js";

/**
 * The targets the gateway refuses (a 403), so that it is never a way into the machine it runs on
 * or its network: loopback, link-local (the cloud metadata address 169.254.169.254 among them),
 * "this network", the IPv6 metadata address, the machine's own addresses, and the gateway's own
 * and the broker's ports. `GATEWAY_DENY_TARGETS` replaces the CIDR list (comma-separated; `none`
 * refuses nothing — what local tests set); `GATEWAY_DENY_PRIVATE=1` adds the private ranges (a
 * gateway shared by clients of other networks). A host name is resolved and each of its addresses
 * checked.
 */
export const DEFAULT_DENY_TARGETS = ["127.0.0.0/8", "0.0.0.0/8", "169.254.0.0/16", "::1/128", "::/128", "fe80::/10", "fd00:ec2::254/128"];

/** The private ranges `GATEWAY_DENY_PRIVATE` adds: RFC 1918, shared address space (CGNAT), IPv6 unique local. */
export const PRIVATE_TARGETS = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"];

/** The machine's own addresses, each as a CIDR of one address (what the default list adds). */
export function ownAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a !== undefined)
    .map((a) => `${a.address.split("%")[0] ?? a.address}/${a.family === "IPv6" ? 128 : 32}`);
}

export class TargetPolicy {
  private readonly blocked = new BlockList();
  /** `address port` of the services refused besides the CIDRs (the gateway's own, the brokers'). */
  private readonly services = new Set<string>();

  /**
   * `cidrs`: the deny list (empty: nothing is refused); `services`: `host:port`s refused too
   * while the list is not empty. Throws on a bad CIDR.
   */
  constructor(
    private readonly cidrs: readonly string[],
    services: readonly string[] = [],
  ) {
    for (const c of cidrs) addCidr(this.blocked, c);
    for (const s of services) {
      const hp = splitHostPort(s);
      if (hp !== undefined && isIP(hp[0]) !== 0) this.services.add(`${hp[0]} ${hp[1]}`);
    }
  }

  /** The reason `host` (`port`) is refused, or undefined when it may be reached. */
  async refusal(host: string, port = 0): Promise<string | undefined> {
    if (this.cidrs.length === 0) return undefined;
    const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
    const addresses = isIP(bare) !== 0 ? [{ address: bare, family: isIP(bare) }] : await lookup(bare, { all: true }).catch(() => []);
    for (const a of addresses) {
      if (this.blocked.check(a.address, a.family === 6 ? "ipv6" : "ipv4"))
        return `target ${host} (${a.address}) is refused by GATEWAY_DENY_TARGETS`;
      if (this.services.has(`${a.address} ${port}`)) return `target ${host}:${port} is the gateway's or a broker's own address`;
    }
    return undefined;
  }
}

/**
 * `GATEWAY_DENY_TARGETS`: unset → the default list and the machine's own addresses; `none` →
 * nothing; else CIDRs, comma-separated. `denyPrivate` (`GATEWAY_DENY_PRIVATE`) adds the private
 * ranges to whichever list.
 */
export function denyTargetsOf(raw: string | undefined, denyPrivate = false): string[] {
  const extra = denyPrivate ? PRIVATE_TARGETS : [];
  if (raw === undefined || raw.trim() === "") return [...DEFAULT_DENY_TARGETS, ...ownAddresses(), ...extra];
  if (raw.trim().toLowerCase() === "none") return [...extra];
  return [
    ...raw
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== ""),
    ...extra,
  ];
}

/**
 * The ports a `CONNECT` may open a tunnel to (`GATEWAY_CONNECT_PORTS`): 443 unless told more, so
 * that a tunnel cannot reach a mail server, a database or an SSH port through the leased proxy.
 */
export class ConnectPorts {
  private readonly ports: ReadonlySet<number> | "any";

  /** `any`, or the ports allowed. */
  constructor(ports: readonly number[] | "any" = [HTTPS_PORT]) {
    this.ports = ports === "any" ? "any" : new Set(ports);
  }

  /** Why a CONNECT to `port` is refused, or undefined. */
  refusal(port: number): string | undefined {
    if (this.ports === "any" || this.ports.has(port)) return undefined;
    return `CONNECT to port ${port} is refused: GATEWAY_CONNECT_PORTS allows ${[...this.ports].join(", ")}`;
  }
}

const HTTPS_PORT = 443;

/** `GATEWAY_CONNECT_PORTS`: unset → 443; `any`; else ports, comma-separated. Throws on a bad port. */
export function connectPortsOf(raw: string | undefined): ConnectPorts {
  if (raw === undefined || raw.trim() === "") return new ConnectPorts();
  if (raw.trim().toLowerCase() === "any") return new ConnectPorts("any");
  const ports = raw.split(",").map((s) => s.trim());
  for (const p of ports) {
    if (!/^\d{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65_535) throw new Error(`GATEWAY_CONNECT_PORTS: "${p}" is not a port`);
  }
  return new ConnectPorts(ports.map(Number));
}

/** A plain-HTTP request's target, as forwarded. */
export interface HttpTarget {
  /** The absolute URL without userinfo or fragment. */
  readonly href: string;
  /** `host[:port]`, the `Host` header sent on. */
  readonly host: string;
  /** As the URL parser reads it (an IPv6 address in brackets). */
  readonly hostname: string;
  readonly port: number;
  /** Path and query (the origin form). */
  readonly path: string;
}

/**
 * A plain-HTTP request's target, rebuilt from what was parsed, so that the target checked is the
 * target forwarded: an upstream proxy never reads the client's raw request line, which it may read
 * otherwise (`http://192.0.2.1?@127.0.0.1/` is 192.0.2.1 to a URL parser, 127.0.0.1 to some
 * proxies). Userinfo and the fragment are dropped; the path starts with `/`. Throws RefusalError
 * (400) unless it is an absolute http: URL.
 */
export function httpTarget(raw: string): HttpTarget {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new RefusalError({ status: 400, message: "the request target must be an absolute http:// URL", headers: {} });
  }
  if (u.protocol !== "http:") {
    throw new RefusalError({
      status: 400,
      message: `only http:// is forwarded as a request (was ${u.protocol}); use CONNECT`,
      headers: {},
    });
  }
  u.username = "";
  u.password = "";
  u.hash = "";
  return { href: u.href, host: u.host, hostname: u.hostname, port: u.port === "" ? 80 : Number(u.port), path: `${u.pathname}${u.search}` };
}

function addCidr(list: BlockList, cidr: string): void {
  const [net = "", bits = ""] = cidr.split("/");
  const family = isIP(net);
  const prefix = Number(bits);
  const max = family === 6 ? 128 : 32;
  if (family === 0 || !/^\d+$/.test(bits) || prefix > max)
    throw new Error(`GATEWAY_DENY_TARGETS: "${cidr}" is not a CIDR (e.g. 10.0.0.0/8)`);
  list.addSubnet(net, prefix, family === 6 ? "ipv6" : "ipv4");
}
