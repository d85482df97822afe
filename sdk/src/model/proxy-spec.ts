import { InvalidInputError, normalizeHost } from "./domain-key.js";
import type { ProxySpecInput } from "./model.js";
import { MAX_PROXY_ID_LENGTH, idUsername, proxyIdOf } from "./proxy-id.js";

/**
 * Validation of proxy specs (SPEC §5 `ProxySpec`): a URL `scheme://[user:pass@]host:port` with
 * scheme http, https or socks5, or a bare `host:port` meaning `http://host:port`. The proxy id is
 * `host:port`, or `username@host:port` with a username (§11; its form: proxy-id.ts). A refusal
 * says what is wrong in fixed words, never quoting the url: it may hold a password, and where a
 * password with `/`, `#` or a space would end is not known until the url parses.
 */

const SCHEMES = new Set(["http:", "https:", "socks5:"]);
const TIER = /^[A-Za-z0-9_.-]{0,64}$/;
const LABEL_KEY = /^[A-Za-z0-9_./-]{1,63}$/;
const LABEL_VALUE = /^[^\n\r=]{0,256}$/;
/** Longest proxy URL accepted. */
export const MAX_PROXY_URL_LENGTH = 2048;
/** Labels of one proxy or one acquire filter. */
export const MAX_LABELS = 32;

/** Validate tier and labels (also used for acquire filters). Throws `InvalidInputError`. */
export function validateTierAndLabels(tier: string, labels: Readonly<Record<string, string>>): void {
  if (!TIER.test(tier)) throw new InvalidInputError(`tier "${tier.slice(0, 80)}" must match ${TIER.source}`);
  const entries = Object.entries(labels);
  if (entries.length > MAX_LABELS) throw new InvalidInputError(`at most ${MAX_LABELS} labels, got ${entries.length}`);
  for (const [k, v] of entries) {
    if (!LABEL_KEY.test(k)) throw new InvalidInputError(`label key "${k.slice(0, 80)}" must match ${LABEL_KEY.source}`);
    if (!LABEL_VALUE.test(v)) throw new InvalidInputError(`label "${k}" has a value with "=" or a line break`);
  }
}

/** Parse one proxy spec into a validated `ProxySpecInput`. Throws `InvalidInputError`. */
export function parseProxySpec(spec: { url: string; tier: string; labels: Readonly<Record<string, string>> }): ProxySpecInput {
  const raw = spec.url.trim();
  if (raw === "") throw new InvalidInputError("proxy url is empty");
  if (raw.length > MAX_PROXY_URL_LENGTH) throw new InvalidInputError(`proxy url is longer than ${MAX_PROXY_URL_LENGTH} characters`);
  const withScheme = raw.includes("://") ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new InvalidInputError("proxy url is not host:port or a proxy URL");
  }
  if (!SCHEMES.has(url.protocol)) {
    throw new InvalidInputError(`proxy url has scheme ${url.protocol.slice(0, -1).slice(0, 20)}; use http, https or socks5`);
  }
  // URL drops a scheme's default port (http://h:80 → port ""), so read it from the text too.
  const authority = withScheme.slice(withScheme.indexOf("://") + 3).split(/[/?#]/)[0] ?? "";
  const port = url.port !== "" ? url.port : (/:(\d{1,5})$/.exec(authority.slice(authority.lastIndexOf("@") + 1))?.[1] ?? "");
  if (port === "") throw new InvalidInputError("proxy url has no port");
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== "") {
    throw new InvalidInputError("proxy url must not have a path, query or fragment");
  }
  let host: string;
  try {
    host = normalizeHost(url.hostname, "proxy host");
  } catch {
    throw new InvalidInputError("proxy url's host is not a valid host name");
  }
  validateTierAndLabels(spec.tier, spec.labels);
  const auth = url.username !== "" ? `${url.username}${url.password !== "" ? `:${url.password}` : ""}@` : "";
  const endpoint = `${host}:${Number(port)}`;
  let username: string;
  try {
    username = idUsername(url.username);
  } catch (err) {
    throw new InvalidInputError(`proxy url: ${err instanceof Error ? err.message : String(err)}`);
  }
  const id = proxyIdOf(endpoint, username);
  if (id.length > MAX_PROXY_ID_LENGTH) {
    throw new InvalidInputError(`proxy url has a username too long for an id (${MAX_PROXY_ID_LENGTH} characters at most)`);
  }
  return { id, url: `${url.protocol}//${auth}${endpoint}`, tier: spec.tier, labels: { ...spec.labels } };
}
