/**
 * The per-request parameters of a gateway client, the way proxy users pass them: in the proxy
 * username (the convention of commercial gateways), and for plain HTTP also as request headers
 * that the gateway strips before forwarding.
 *
 * Username grammar: `key-value` pairs joined by `-`, keys from a fixed set, in any order:
 *
 *     session-cart42-tier-premium-label-country:de-label-kind:resi-pool-eu-wait-2.5
 *
 * - `session-ID`   sticky session (the same proxy for ID while it stays healthy)
 * - `tier-NAME`    only proxies of that tier
 * - `label-K:V`    only proxies with label K = V (repeatable)
 * - `pool-NAME`    the pool (default: the gateway's)
 * - `wait-SECONDS` how long to wait for a proxy (decimal, at most the gateway's maximum)
 *
 * Values are letters, digits, `.`, `_` (and `:` inside a label): `-` separates. An empty
 * username means no parameters. Anything else is malformed: a 407 naming what is wrong.
 */

/** Request headers that carry the same parameters (plain HTTP, intercepted HTTPS); stripped before forwarding. */
export const PARAM_HEADERS = {
  session: "x-proxybroker-session",
  tier: "x-proxybroker-tier",
  /** `K=V`, comma-separated, or repeated. */
  labels: "x-proxybroker-labels",
  pool: "x-proxybroker-pool",
  /** Seconds. */
  wait: "x-proxybroker-max-wait",
} as const;

export interface GatewayParams {
  readonly session?: string;
  readonly tier?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly pool?: string;
  readonly maxWaitMs?: number;
}

/** A username or header the grammar does not accept: the client gets a 407 (a 400 for a header) with this message. */
export class ParamsError extends Error {
  override readonly name = "ParamsError";
}

const VALUE = /^[A-Za-z0-9._]{1,256}$/;
const LABEL = /^([A-Za-z0-9._]{1,64})[:=]([A-Za-z0-9._]{1,256})$/;
const KEYS = new Set(["session", "tier", "label", "pool", "wait"]);

interface Draft {
  session?: string;
  tier?: string;
  labels: Record<string, string>;
  pool?: string;
  maxWaitMs?: number;
}

/** Parse a proxy username; throws `ParamsError`. */
export function paramsFromUsername(username: string): GatewayParams {
  const draft: Draft = { labels: {} };
  if (username === "") return draft;
  const parts = username.split("-");
  if (parts.length % 2 !== 0) throw new ParamsError(`proxy username: expected key-value pairs (${grammarHint()}), got "${clip(username)}"`);
  for (let i = 0; i < parts.length; i += 2) set(draft, parts[i] ?? "", parts[i + 1] ?? "", "proxy username");
  return draft;
}

/** Parse the parameter headers of a request (lowercase names); throws `ParamsError`. */
export function paramsFromHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): GatewayParams {
  const draft: Draft = { labels: {} };
  const one = (name: string): string | undefined => {
    const v = headers[name];
    return Array.isArray(v) ? v.join(",") : v;
  };
  const session = one(PARAM_HEADERS.session);
  if (session !== undefined) set(draft, "session", session.trim(), PARAM_HEADERS.session);
  const tier = one(PARAM_HEADERS.tier);
  if (tier !== undefined) set(draft, "tier", tier.trim(), PARAM_HEADERS.tier);
  const pool = one(PARAM_HEADERS.pool);
  if (pool !== undefined) set(draft, "pool", pool.trim(), PARAM_HEADERS.pool);
  const wait = one(PARAM_HEADERS.wait);
  if (wait !== undefined) set(draft, "wait", wait.trim(), PARAM_HEADERS.wait);
  const labels = one(PARAM_HEADERS.labels);
  if (labels !== undefined) for (const l of labels.split(",")) set(draft, "label", l.trim(), PARAM_HEADERS.labels);
  return draft;
}

/**
 * `base` (the username's or the tunnel's parameters) with a request's parameter headers over it;
 * the headers are then removed, the gateway's: they never reach the site. Throws `ParamsError`.
 */
export function withParamHeaders(
  base: GatewayParams,
  req: { rawHeaders: string[]; headers: Record<string, string | string[] | undefined> },
): GatewayParams {
  if (!hasParamHeaders(req.headers)) return base;
  const params = mergeParams(base, paramsFromHeaders(req.headers));
  stripParamHeaders(req);
  return params;
}

/** The 400 for malformed parameter headers. */
export function paramHeadersRefusal(err: unknown): {
  readonly status: 400;
  readonly message: string;
  readonly headers: Readonly<Record<string, string>>;
} {
  return { status: 400, message: err instanceof ParamsError ? err.message : "malformed parameter header", headers: {} };
}

function stripParamHeaders(req: { rawHeaders: string[]; headers: Record<string, unknown> }): void {
  const names = PARAM_NAMES;
  const raw = req.rawHeaders;
  const kept: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!names.has((raw[i] ?? "").toLowerCase())) kept.push(raw[i] ?? "", raw[i + 1] ?? "");
  }
  raw.splice(0, raw.length, ...kept);
  for (const n of names) if (n in req.headers) delete req.headers[n];
}

const PARAM_NAMES: ReadonlySet<string> = new Set(Object.values(PARAM_HEADERS));

/** Whether a request carries any parameter header (lowercase names): most carry none. */
function hasParamHeaders(headers: Readonly<Record<string, unknown>>): boolean {
  for (const n of PARAM_NAMES) if (headers[n] !== undefined) return true;
  return false;
}

/** The username's parameters, with the headers' on top (a header wins over the same key). */
export function mergeParams(base: GatewayParams, over: GatewayParams): GatewayParams {
  return {
    ...base,
    ...over,
    labels: { ...base.labels, ...over.labels },
  };
}

function set(draft: Draft, key: string, value: string, where: string): void {
  if (!KEYS.has(key)) throw new ParamsError(`${where}: unknown key "${clip(key)}" (${grammarHint()})`);
  if (key === "label") {
    const m = LABEL.exec(value);
    if (m === null) throw new ParamsError(`${where}: a label is NAME:VALUE (letters, digits, . and _), got "${clip(value)}"`);
    draft.labels[m[1] ?? ""] = m[2] ?? "";
    return;
  }
  if (key === "wait") {
    const seconds = Number(value);
    if (!/^\d+(\.\d+)?$/.test(value) || !Number.isFinite(seconds))
      throw new ParamsError(`${where}: wait is seconds (e.g. 2.5), got "${clip(value)}"`);
    draft.maxWaitMs = Math.round(seconds * 1000);
    return;
  }
  if (!VALUE.test(value)) throw new ParamsError(`${where}: ${key} must be 1–256 letters, digits, . or _, got "${clip(value)}"`);
  if (key === "session") draft.session = value;
  else if (key === "tier") draft.tier = value;
  else draft.pool = value;
}

function grammarHint(): string {
  return "session-ID, tier-NAME, label-K:V, pool-NAME, wait-SECONDS joined by -";
}

/** A value as shown in an error: short, never a password (usernames only reach here). */
function clip(s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
