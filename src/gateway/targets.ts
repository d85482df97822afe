import { BlockList, isIP } from "node:net";
import { lookup } from "node:dns/promises";
import { splitHostPort } from "./address.js";

/**
 * The targets the gateway refuses (a 403), so that it is never a way into the machine it runs on
 * or its network: loopback, link-local (the cloud metadata address 169.254.169.254 among them),
 * "this network", the IPv6 metadata address, and the gateway's own and the broker's ports.
 * `GATEWAY_DENY_TARGETS` replaces the CIDR list (comma-separated; `none` refuses nothing — what
 * local tests set). A host name is resolved and each of its addresses checked.
 */
export const DEFAULT_DENY_TARGETS = ["127.0.0.0/8", "0.0.0.0/8", "169.254.0.0/16", "::1/128", "::/128", "fe80::/10", "fd00:ec2::254/128"];

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

/** `GATEWAY_DENY_TARGETS`: unset → the default list; `none` → nothing; else CIDRs, comma-separated. */
export function denyTargetsOf(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === "") return [...DEFAULT_DENY_TARGETS];
  if (raw.trim().toLowerCase() === "none") return [];
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
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
