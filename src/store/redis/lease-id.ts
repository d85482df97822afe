/**
 * Lease id codec. A lease id is `<32 hex>.<base64url(pool \x1f domainKey \x1f proxyId)>`: 128
 * random bits from `crypto.randomBytes`, plus what any broker replica needs to build the keys of
 * a renew or release without a lookup. The Lua scripts key the lease record by the random part
 * and check that the record names the same domain-key and proxy.
 */
import { randomBytes } from "node:crypto";
import { isPoolName } from "./keys.js";

/** What a lease id carries. */
export interface LeaseIdParts {
  /** 32 lowercase hex digits (128 random bits). */
  readonly hex: string;
  readonly pool: string;
  readonly domainKey: string;
  readonly proxyId: string;
}

const SEP = "\x1f";
const HEX = /^[0-9a-f]{32}$/;
/** Domain-keys are hostnames (IPv6 in brackets) or group names; proxy ids are host:port. */
const DOMAIN_KEY = /^[a-z0-9._:[\]-]{1,255}$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: a proxy id holds no control character, space or DEL
const PROXY_ID = /^[^\x00-\x20\x7f]{3,300}$/;
const B64URL = /^[A-Za-z0-9_-]+$/;
/** Longest id accepted by the decoder (a pool of 64, a hostname of 253, an id of ~300). */
const MAX_LEN = 1_024;

const POOL_BYTES = 4096;
let randomPool = Buffer.alloc(0);
let poolOffset = POOL_BYTES;

/** 128 fresh random bits as 32 lowercase hex digits (each id's bytes are used once). */
export function newLeaseHex(): string {
  // One randomBytes call per 256 ids: a call per id cost ~10% of the broker's CPU on the hot path.
  if (poolOffset >= POOL_BYTES) {
    randomPool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  const hex = randomPool.toString("hex", poolOffset, poolOffset + 16);
  poolOffset += 16;
  return hex;
}

/** The lease id of `parts`. */
export function encodeLeaseId(parts: LeaseIdParts): string {
  const tail = Buffer.from(`${parts.pool}${SEP}${parts.domainKey}${SEP}${parts.proxyId}`, "utf8").toString("base64url");
  return `${parts.hex}.${tail}`;
}

/** The parts of a lease id, or undefined when it is malformed. */
export function decodeLeaseId(leaseId: string): LeaseIdParts | undefined {
  if (leaseId.length > MAX_LEN || leaseId.length < 34 || leaseId[32] !== ".") return undefined;
  const hex = leaseId.slice(0, 32);
  const tail = leaseId.slice(33);
  if (!HEX.test(hex) || !B64URL.test(tail)) return undefined;
  const fields = Buffer.from(tail, "base64url").toString("utf8").split(SEP);
  if (fields.length !== 3) return undefined;
  const [pool = "", domainKey = "", proxyId = ""] = fields;
  if (!isPoolName(pool) || !DOMAIN_KEY.test(domainKey) || !PROXY_ID.test(proxyId)) return undefined;
  return { hex, pool, domainKey, proxyId };
}
