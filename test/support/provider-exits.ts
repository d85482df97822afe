/**
 * The provider simulator's session → exit table: K exit addresses on loopback (127.0.0.2 …
 * 127.0.0.(K+1) by default; Linux routes all of 127/8 on lo, so no setup is needed), each session
 * name mapped stably onto one of them — by the order sessions were first seen, or by a hash of the
 * name — and remappable at run time (a provider moving a session to another exit).
 */

/** How a session name is given its exit: first-seen order (round robin) or a hash of the name. */
export type ExitAssignment = "order" | "hash";

export interface ExitTableOptions {
  /** The exit addresses, in order (at least one). */
  readonly exits: readonly string[];
  readonly assignment: ExitAssignment;
}

export interface ExitTable {
  readonly exits: readonly string[];
  /** The session's exit (assigned on first sight, stable afterwards unless remapped). */
  exitOf(session: string): string;
  /** From now on the session leaves from `exit` (any local address, also one outside `exits`). */
  remap(session: string, exit: string): void;
}

/** `count` loopback addresses from 127.0.0.`firstOctet` on. */
export function loopbackExits(count: number, firstOctet = 2): string[] {
  if (!Number.isInteger(count) || count < 1 || firstOctet < 1 || firstOctet + count - 1 > 254)
    throw new Error(`exits: need 1 … ${255 - firstOctet} loopback addresses from 127.0.0.${firstOctet}, got ${count}`);
  return Array.from({ length: count }, (_, i) => `127.0.0.${firstOctet + i}`);
}

/** FNV-1a, 32 bits: a stable hash of a session name. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function createExitTable(options: ExitTableOptions): ExitTable {
  const { exits, assignment } = options;
  if (exits.length === 0) throw new Error("exits: at least one exit address");
  const assigned = new Map<string, string>();
  let seen = 0;
  return {
    exits,
    exitOf(session) {
      const known = assigned.get(session);
      if (known !== undefined) return known;
      const index = assignment === "hash" ? fnv1a(session) % exits.length : seen++ % exits.length;
      const exit = exits[index] ?? exits[0] ?? "";
      assigned.set(session, exit);
      return exit;
    },
    remap(session, exit) {
      assigned.set(session, exit);
    },
  };
}
