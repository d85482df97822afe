import { InvalidInputError } from "./domain-key.js";

/**
 * Proxy ids (docs/spec.md §11 Identity): `host:port` for a proxy without username, and
 * `username@host:port` otherwise; a password is never part of an id.
 *
 * The username of an id is in one canonical percent-encoding: it is decoded (UTF-8), then every
 * byte other than `A–Z a–z 0–9 . _ ~ -` is written `%XX` (uppercase hex). So `user`, `us%65r`
 * and `us%65r` spelled any other way give one id, and an id holds no `@`, `:`, `/`, `;`, `=`,
 * space, tab, line break or control character before its `@` — safe in Redis keys, the stores'
 * separated strings, lease ids, metric labels and CLI output. A host never contains `@`, so the
 * first `@` of an id ends its username.
 */

/** Longest proxy id accepted anywhere an id is taken (`proxy_id`, admin ids). */
export const MAX_PROXY_ID_LENGTH = 300;

const KEEP = /^[A-Za-z0-9._~-]$/;

/**
 * The id form of a URL's username (as `URL.username` gives it: percent-encoded), "" for none.
 * Throws `InvalidInputError` when it is not percent-encoded UTF-8.
 */
export function idUsername(encoded: string): string {
  if (encoded === "") return "";
  let decoded: string;
  try {
    decoded = decodeURIComponent(encoded);
  } catch {
    throw new InvalidInputError("the proxy username is not valid percent-encoded UTF-8");
  }
  let out = "";
  for (const byte of new TextEncoder().encode(decoded)) {
    const ch = String.fromCharCode(byte);
    out += KEEP.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The id of a proxy at `endpoint` (`host:port`) with `username` (id form, "" = none). */
export function proxyIdOf(endpoint: string, username: string): string {
  return username === "" ? endpoint : `${username}@${endpoint}`;
}

/** The `host:port` of an id. */
export function endpointOf(id: string): string {
  const at = id.indexOf("@");
  return at < 0 ? id : id.slice(at + 1);
}

/** The username of an id in its id form ("" = none). */
export function usernameOf(id: string): string {
  const at = id.indexOf("@");
  return at < 0 ? "" : id.slice(0, at);
}

/** The username of a stored proxy URL in its id form ("" = none, or one that cannot be read). */
export function urlUsername(url: string): string {
  try {
    return idUsername(new URL(url).username);
  } catch {
    return "";
  }
}

/**
 * Migration (docs/store-semantics.md §addProxies): before usernames were part of ids, a proxy
 * added as `http://user:pw@h:p` was stored as `h:p`. When `spec` (id `user@h:p`) is not stored
 * but `h:p` is, with username `user` in its stored URL, that record is this proxy: the id to
 * write to. Else `spec` itself.
 */
export function storedIdOf(id: string, lookup: (id: string) => { readonly url: string } | undefined): string {
  const username = usernameOf(id);
  if (username === "" || lookup(id) !== undefined) return id;
  const legacy = lookup(endpointOf(id));
  return legacy !== undefined && urlUsername(legacy.url) === username ? endpointOf(id) : id;
}
