import type { OutcomeKindName } from "../model/model.js";
import { DEFAULT_RULES, ruleHost } from "./rules.js";
import type { Classification, ClassifyRules } from "./types.js";

/**
 * Classify a failure without a response (undici / Node / fetch errors). The error, its `cause`
 * chain and an AggregateError's `errors` are searched; the most telling finding wins:
 *
 * - `errorKinds[code or name]` from the rules;
 * - undici's tunnel failure ("Proxy response (407) !== 200 when HTTP Tunneling"), connect,
 *   header and body timeouts, socket errors, `ECONNREFUSED`, `ECONNRESET`, `ETIMEDOUT`,
 *   `EHOSTUNREACH` and kin, SOCKS5 errors, a TLS failure towards the proxy, a `TimeoutError`
 *   (from `AbortSignal.timeout`) → PROXY_ERROR;
 * - a DNS failure (`ENOTFOUND`, `EAI_AGAIN`) of the target host → TARGET_ERROR; of another host
 *   (the proxy's, when `targetHost` is known) → PROXY_ERROR; a rejected TLS certificate → TARGET_ERROR;
 * - then an abort by the caller (`AbortError` not caused by a timeout) → ABANDONED;
 * - anything else → ABANDONED.
 */

/** What `classifyError` knows beyond the error. */
export interface ErrorContext {
  /** The host the request was for; tells a target DNS failure from the proxy's. */
  readonly targetHost?: string;
  /** The rules for that host (for `errorKinds`); default `DEFAULT_RULES`. */
  readonly rules?: ClassifyRules;
}

const PROXY_CODES: ReadonlySet<string> = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_PRX_TLS",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
  "EPIPE",
  "ECONNABORTED",
  "ESOCKETTIMEDOUT",
]);
const DNS_CODES: ReadonlySet<string> = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_FAIL"]);
const CERT_CODES: ReadonlySet<string> = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
]);
const TUNNEL = /Proxy response \((\d{3})\) !== 200 when HTTP Tunneling/;

/** The fields of an error the rules look at. */
interface Facts {
  readonly code: string;
  readonly name: string;
  readonly message: string;
  readonly hostname: string;
}

interface Finding {
  readonly kind: OutcomeKindName;
  readonly reason: string;
  /** 3 = rule, 2 = a specific cause, 1 = an abort (weaker than any cause found beside it). */
  readonly strength: number;
}

function str(o: object, key: string): string {
  const v: unknown = (o as Record<string, unknown>)[key];
  return typeof v === "string" ? v : "";
}

/** The error and what it wraps, outermost first (bounded, cycle-safe). */
function chain(err: unknown): Facts[] {
  const out: Facts[] = [];
  const seen = new Set<object>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && out.length < 16) {
    const e = queue.shift();
    if (typeof e !== "object" || e === null || seen.has(e)) continue;
    seen.add(e);
    out.push({ code: str(e, "code"), name: str(e, "name"), message: str(e, "message"), hostname: str(e, "hostname") });
    const rec = e as Record<string, unknown>;
    queue.push(rec["cause"]);
    if (Array.isArray(rec["errors"])) queue.push(...(rec["errors"] as unknown[]));
  }
  return out;
}

/** An own entry of a rules map (never an inherited `toString` or the like). */
function own(map: Readonly<Record<string, OutcomeKindName>>, key: string): OutcomeKindName | undefined {
  return key !== "" && Object.hasOwn(map, key) ? map[key] : undefined;
}

function label(f: Facts): string {
  return f.code !== "" ? f.code : f.name;
}

function examine(f: Facts, rules: ClassifyRules, targetHost: string | undefined): Finding | undefined {
  const mapped = own(rules.errorKinds, f.code) ?? own(rules.errorKinds, f.name);
  if (mapped !== undefined) return { kind: mapped, reason: `${label(f)} mapped to ${mapped} by rule`, strength: 3 };
  const tunnel = TUNNEL.exec(f.message);
  if (tunnel) {
    const why = tunnel[1] === "407" ? "proxy answered 407 (authentication required) to CONNECT" : `proxy answered ${tunnel[1]} to CONNECT`;
    return { kind: "PROXY_ERROR", reason: why, strength: 2 };
  }
  if (PROXY_CODES.has(f.code) || f.code.startsWith("UND_ERR_SOCKS5")) {
    return { kind: "PROXY_ERROR", reason: `${f.code}${f.message === "" ? "" : `: ${f.message}`}`, strength: 2 };
  }
  if (DNS_CODES.has(f.code)) {
    const host = f.hostname === "" ? "" : ruleHost(f.hostname);
    if (targetHost !== undefined && host !== "" && host !== ruleHost(targetHost)) {
      return { kind: "PROXY_ERROR", reason: `${f.code}: proxy host ${host} does not resolve`, strength: 2 };
    }
    return { kind: "TARGET_ERROR", reason: `${f.code}: target ${host === "" ? "host" : host} does not resolve`, strength: 2 };
  }
  if (CERT_CODES.has(f.code)) return { kind: "TARGET_ERROR", reason: `${f.code}: TLS certificate rejected`, strength: 2 };
  if (f.name === "TimeoutError") return { kind: "PROXY_ERROR", reason: `timed out (${f.message || "timeout signal"})`, strength: 2 };
  if (f.name === "AbortError" || f.code === "ABORT_ERR" || f.code === "UND_ERR_ABORTED" || f.code === "UND_ERR_ABORT") {
    return { kind: "ABANDONED", reason: `aborted by the caller (${label(f)})`, strength: 1 };
  }
  return undefined;
}

/** Classify an error raised instead of a response. `httpStatus` is 0. Pure. */
export function classifyError(err: unknown, context: ErrorContext = {}): Classification {
  const rules = context.rules ?? DEFAULT_RULES;
  const facts = chain(err);
  let best: Finding | undefined;
  for (const f of facts) {
    const found = examine(f, rules, context.targetHost);
    if (found && (best === undefined || found.strength > best.strength)) best = found;
  }
  if (best) return { kind: best.kind, httpStatus: 0, retryAfterMs: 0, reason: best.reason };
  const top = facts[0];
  const what = top === undefined ? String(err) : `${label(top) || "error"}${top.message === "" ? "" : `: ${top.message}`}`;
  return { kind: "ABANDONED", httpStatus: 0, retryAfterMs: 0, reason: `unrecognised error (${what})` };
}
