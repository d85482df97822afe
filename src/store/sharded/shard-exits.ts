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
import type { Shards } from "./host.js";

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
