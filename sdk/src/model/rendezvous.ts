/**
 * Rendezvous (highest-random-weight) hashing: which live worker owns which proxy while the broker
 * is unreachable. Pure and deterministic across processes and machines: the weight of (worker,
 * proxy) is FNV-1a 64 over the UTF-8 bytes of `worker + "\n" + proxy`, followed by MurmurHash3's
 * fmix64 avalanche, compared as an unsigned 64-bit number; ties (practically never) go to the
 * worker id that sorts first. Every proxy has exactly one owner, and a worker joining or leaving
 * moves only the proxies it gains or loses (about 1/n of them).
 *
 * The 64-bit arithmetic runs on 16-bit limbs and 32-bit halves (no BigInt on the hot path).
 */

const encoder = new TextEncoder();

/** FNV-1a 64 state as four 16-bit limbs, least significant first. */
type Fnv = readonly [number, number, number, number];

/** FNV-1a 64 offset basis 0xcbf29ce484222325. */
const FNV_START: Fnv = [0x2325, 0x8422, 0x9ce4, 0xcbf2];

/** Registers: the FNV state after `fnvFeed`, and the weight after `weigh` (no allocation per weight). */
let f0 = 0;
let f1 = 0;
let f2 = 0;
let f3 = 0;
let outHi = 0;
let outLo = 0;

/** Feed bytes after state `s` into f0..f3; the prime is 2^40 + 0x1b3: h·prime = h·0x1b3 + (h << 40). */
function fnvFeed(s: Fnv, bytes: Uint8Array): void {
  let [h0, h1, h2, h3] = s;
  for (let i = 0; i < bytes.length; i++) {
    h0 ^= bytes[i]!;
    const t0 = h0 * 0x1b3;
    const t1 = h1 * 0x1b3 + (t0 >>> 16);
    const t2 = h2 * 0x1b3 + (h0 << 8) + (t1 >>> 16);
    h3 = (h3 * 0x1b3 + (h1 << 8) + (t2 >>> 16)) & 0xffff;
    h0 = t0 & 0xffff;
    h1 = t1 & 0xffff;
    h2 = t2 & 0xffff;
  }
  f0 = h0;
  f1 = h1;
  f2 = h2;
  f3 = h3;
}

/** (hi·2^32 + lo) · (bh·2^32 + bl) mod 2^64 into outHi/outLo, unsigned 32-bit halves. */
function mul64(hi: number, lo: number, bh: number, bl: number): void {
  const a0 = lo & 0xffff;
  const a1 = lo >>> 16;
  const b0 = bl & 0xffff;
  const b1 = bl >>> 16;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const mid = ((a0 * b0) >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  const carry = a1 * b1 + Math.floor(p01 / 0x10000) + Math.floor(p10 / 0x10000) + Math.floor(mid / 0x10000);
  outHi = (carry + Math.imul(hi, bl) + Math.imul(lo, bh)) >>> 0;
  outLo = Math.imul(lo, bl) >>> 0;
}

/** FNV-1a 64 of prefix + bytes, then MurmurHash3 fmix64, into outHi/outLo. */
function weigh(prefix: Fnv, bytes: Uint8Array): void {
  fnvFeed(prefix, bytes);
  const hi = ((f3 << 16) | f2) >>> 0;
  mul64(hi, (((f1 << 16) | f0) ^ (hi >>> 1)) >>> 0, 0xff51afd7, 0xed558ccd);
  mul64(outHi, (outLo ^ (outHi >>> 1)) >>> 0, 0xc4ceb9fe, 0x1a85ec53);
  outLo = (outLo ^ (outHi >>> 1)) >>> 0;
}

/** FNV state after `worker + "\n"`, reused for every proxy. */
function workerPrefix(worker: string): Fnv {
  fnvFeed(FNV_START, encoder.encode(`${worker}\n`));
  return [f0, f1, f2, f3];
}
/** The 64-bit weight of (worker, proxy); exported for tests and diagnostics. */
export function rendezvousWeight(worker: string, proxyId: string): bigint {
  weigh(workerPrefix(worker), encoder.encode(proxyId));
  return (BigInt(outHi) << 32n) | BigInt(outLo);
}

/** Workers deduplicated and sorted, with their FNV prefixes. */
function prepare(workers: Iterable<string>): { ids: string[]; prefixes: Fnv[] } {
  const ids = [...new Set(workers)].sort();
  return { ids, prefixes: ids.map(workerPrefix) };
}

/** Index of the heaviest worker for a proxy; the first (lowest id) wins a tie. */
function heaviest(prefixes: readonly Fnv[], proxyBytes: Uint8Array): number {
  let best = -1;
  let bestHi = 0;
  let bestLo = 0;
  for (let i = 0; i < prefixes.length; i++) {
    weigh(prefixes[i]!, proxyBytes);
    if (best < 0 || outHi > bestHi || (outHi === bestHi && outLo > bestLo)) {
      best = i;
      bestHi = outHi;
      bestLo = outLo;
    }
  }
  return best;
}

/** The worker that owns `proxyId` among `workers` (deduplicated); undefined when there are none. */
export function ownerOf(proxyId: string, workers: readonly string[]): string | undefined {
  const { ids, prefixes } = prepare(workers);
  const i = heaviest(prefixes, encoder.encode(proxyId));
  return i < 0 ? undefined : ids[i];
}

/**
 * The proxies of `proxyIds` that `self` owns among `workers ∪ {self}`, in the input order
 * (duplicates in `proxyIds` are kept once).
 */
export function shareOf(proxyIds: readonly string[], workers: readonly string[], self: string): string[] {
  const { ids, prefixes } = prepare([...workers, self]);
  const me = ids.indexOf(self);
  const out: string[] = [];
  for (const id of new Set(proxyIds)) {
    if (heaviest(prefixes, encoder.encode(id)) === me) out.push(id);
  }
  return out;
}
