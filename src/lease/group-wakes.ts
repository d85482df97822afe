/**
 * Wake-ups across an isolation group (G8). A proxy that one domain-key of a group releases becomes
 * free for the group's other keys, whose waiters wait on queues of their own: a release wakes
 * them too, here and, through the release feed, on other replicas (a grouped release is also
 * announced on the group's channel, the domain-key `#<group>`). Without this they would find the
 * proxy only at their next poll.
 */
import type { ReleaseFeed } from "@proxybroker/sdk/engine";

/** The feed's domain-key of an isolation group's channel. */
export function groupChannel(group: string): string {
  return `#${group}`;
}

/** Whether a domain-key of the feed names an isolation group's channel (and which). */
export function channelGroup(domainKey: string): string | undefined {
  return domainKey.startsWith("#") ? domainKey.slice(1) : undefined;
}

export class GroupWakes {
  /** `<pool>\0<group>` → the queue keys with waiters of the group's domain-keys. */
  private readonly queues = new Map<string, Set<string>>();
  /** Queue key → its group key. */
  private readonly groupOf = new Map<string, string>();

  constructor(private readonly feed: ReleaseFeed | undefined) {}

  /** Queue `queueKey` of `pool` waits for a domain-key of `group` (called while it has waiters). */
  join(pool: string, group: string, queueKey: string): void {
    if (this.groupOf.has(queueKey)) return;
    const key = `${pool}\u0000${group}`;
    let set = this.queues.get(key);
    if (set === undefined) {
      set = new Set();
      this.queues.set(key, set);
      this.feed?.watch(pool, groupChannel(group));
    }
    set.add(queueKey);
    this.groupOf.set(queueKey, key);
  }

  /** Queue `queueKey` has no waiters left. */
  leave(queueKey: string): void {
    const key = this.groupOf.get(queueKey);
    if (key === undefined) return;
    this.groupOf.delete(queueKey);
    const set = this.queues.get(key);
    set?.delete(queueKey);
    if (set !== undefined && set.size === 0) {
      this.queues.delete(key);
      const at = key.indexOf("\u0000");
      this.feed?.unwatch(key.slice(0, at), groupChannel(key.slice(at + 1)));
    }
  }

  /** The queue keys waiting in `group` of `pool` (none: empty). */
  waiting(pool: string, group: string): Iterable<string> {
    return this.queues.get(`${pool}\u0000${group}`) ?? [];
  }
}
