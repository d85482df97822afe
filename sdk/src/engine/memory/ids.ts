/**
 * Internal to the in-memory engine: id ordering and lease id generation.
 */

/** Map a UTF-16 code unit so that unit order equals code point (and so UTF-8 byte) order. */
function unitRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}

/**
 * Compare two ids in UTF-8 byte order (the order Redis uses for strings): negative when `a`
 * sorts first, 0 when equal, positive otherwise.
 */
export function compareIds(a: string, b: string): number {
  if (a === b) return 0;
  const len = Math.min(a.length, b.length);
  for (let i = 0; i < len; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return unitRank(x) - unitRank(y);
  }
  return a.length - b.length;
}

const HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Random bytes are drawn in blocks: one getRandomValues call costs several microseconds. */
const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let poolUsed = POOL_BYTES;

/** A new lease id: 128 random bits from Web Crypto, as 32 lowercase hex digits. */
export function newLeaseId(): string {
  if (poolUsed + 16 > POOL_BYTES) {
    globalThis.crypto.getRandomValues(pool);
    poolUsed = 0;
  }
  let out = "";
  for (let i = poolUsed; i < poolUsed + 16; i++) out += HEX[pool[i]!];
  pool.fill(0, poolUsed, poolUsed + 16);
  poolUsed += 16;
  return out;
}
