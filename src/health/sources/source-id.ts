import { createHash } from "node:crypto";

/** A source's id: 12 hex digits of a hash of its pool and URL (one source per URL in a pool). */
export function sourceIdOf(pool: string, url: string): string {
  return createHash("sha256").update(`${pool}\n${url}`).digest("hex").slice(0, 12);
}
