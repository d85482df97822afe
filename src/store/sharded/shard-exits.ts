/**
 * G9 across the shards of a sharded pool. A proxy's siblings are read in its own shard's script
 * (lua/includes/exits.lua), so proxies of one exit on different shards (ports of one host, hosts
 * that share an exit) could be granted one domain-key at once. After a health check showed a
 * proxy's exit, the lowest shard that has a member of that exit keeps it; the exit's members on
 * every other shard are marked (`xc`) and not granted while it does. A proxy's own mark is
 * settled again at each of its checks: it is lifted once no lower shard has a member of its exit.
 * Only a mark seen before the members were read is lifted: a lower shard's proxy that joins the
 * exit meanwhile, unseen, marks this one after that read, and that mark stays. (Left: a proxy
 * marked before for another member may lift a mark set in that moment; its next check sets it
 * again.)
 */
import { hostOf } from "@proxybroker/sdk/engine";
import type { Shards } from "./host.js";

/** Hosts whose members settleHosts reads at once. */
const HOSTS_PER_ROUND = 500;

export async function settleExit(
  at: Shards,
  shown: { readonly pool: string; readonly shard: number; readonly id: string; readonly exitIp: string },
): Promise<void> {
  const { inner, shards } = at;
  const { pool, shard, id, exitIp } = shown;
  const names = shards.names(pool);
  const wasMarked = await inner.exitConflicted(shards.name(pool, shard), id);
  // written first, read after: of two proxies shown at once on two shards, one sees the other
  const members = await Promise.all(names.map((name, i) => (i === shard ? Promise.resolve([id]) : inner.exitMembers(name, exitIp))));
  const lowest = members.findIndex((m) => m.length > 0);
  await Promise.all(
    names.map((name, i) => {
      const ids = members[i] ?? [];
      if (i === shard) return lowest < shard || wasMarked ? inner.markExitConflict(name, [id], lowest < shard) : Promise.resolve();
      return i > lowest && ids.length > 0 ? inner.markExitConflict(name, ids, true) : Promise.resolve();
    }),
  );
}

/**
 * Proxies `added` to a sharded pool: a host whose proxies now lie on more than one shard marks all
 * of them as sharing it (each shard's script sees only its own), so that they wait for their first
 * probe where the pool's proxies that share a host do.
 */
export async function settleHosts(at: Shards, pool: string, added: readonly string[]): Promise<void> {
  const { inner, shards } = at;
  const names = shards.names(pool);
  const hosts = [...new Set(added.map(hostOf))];
  // read in chunks of hosts, every shard's members of each at once (one round trip per chunk)
  for (let at0 = 0; at0 < hosts.length; at0 += HOSTS_PER_ROUND) {
    await Promise.all(
      hosts.slice(at0, at0 + HOSTS_PER_ROUND).map(async (host) => {
        const members = await Promise.all(names.map((name) => inner.hostMembers(name, host)));
        if (members.filter((m) => m.length > 0).length < 2) return;
        await Promise.all(
          names.map((name, i) => ((members[i] ?? []).length > 0 ? inner.markSharesHost(name, members[i] ?? []) : Promise.resolve())),
        );
      }),
    );
  }
}
