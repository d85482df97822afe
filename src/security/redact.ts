/**
 * How every secret-bearing URL is shown (docs/spec.md §8 Secrets). Proxy passwords never leave
 * the broker except in a worker's own lease and in the pool snapshot: everything else that shows
 * a proxy URL — ListProxies, AddProxies' rejected entries, the CLI's list and import — shows
 * `redactProxyUrl`; a source's URL shows `redactSourceUrl`; free text (error messages, log lines)
 * passes `redactSecrets`. The URL forms are rebuilt from the parsed URL, never masked in place.
 */

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
/** Where an authority ends for the URL parser (special schemes end it at `\` too). */
const AUTHORITY_END = /[/?#\\]/;
/** Longest text of an entry that does not parse shown before the point a password could start. */
const MAX_SHOWN_PREFIX = 100;
/** What stands for a part that is not shown. */
const HIDDEN = "***";

/**
 * A proxy URL as shown: scheme, username, host and port, the password (if any) as `***`
 * (`http://user:***@host:port`), from the URL as parsed. An entry whose userinfo the parser may
 * have split wrongly — it does not parse, or has a path, query or fragment (where a password's `/`,
 * `?`, `#` or `\` would put the rest of it) — is shown only up to the first `:` that could start a
 * password, then `…` (`redactUnparsed`).
 */
export function redactProxyUrl(text: string): string {
  const raw = text.trim();
  const withScheme = SCHEME.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return redactUnparsed(raw);
  }
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== "" || /\s/.test(raw)) {
    return redactUnparsed(raw);
  }
  // the whole authority is the text after `://` (no path, query or fragment), its userinfo before the last `@`
  const authority = withScheme.slice(withScheme.indexOf("://") + 3).split(AUTHORITY_END)[0] ?? "";
  // URL drops a scheme's default port (http://h:80 → port ""): read it from the text after the userinfo
  const port = url.port !== "" ? url.port : (/:(\d{1,5})$/.exec(authority.slice(authority.lastIndexOf("@") + 1))?.[1] ?? "");
  const user = url.username !== "" || url.password !== "" ? `${url.username}${url.password !== "" ? `:${HIDDEN}` : ""}@` : "";
  // a bare `host:port` is shown so, without the scheme it stands for
  return `${SCHEME.test(raw) ? `${url.protocol}//` : ""}${user}${url.hostname}${port !== "" ? `:${port}` : ""}`;
}

/**
 * An entry that did not parse (a rejected line of a proxies file) as shown: its scheme and what
 * comes before the first `:`, `/`, `?`, `#`, `\` or space after it — a username or a host, never
 * a password — then `…` when anything was cut.
 */
export function redactUnparsed(text: string): string {
  const raw = text.trim();
  const scheme = SCHEME.exec(raw)?.[0] ?? "";
  const rest = raw.slice(scheme.length);
  const cut = rest.search(/[:/?#\\\s]/);
  const shown = (cut < 0 ? rest : rest.slice(0, cut)).slice(0, MAX_SHOWN_PREFIX);
  return `${scheme}${shown}${shown.length < rest.length ? "…" : ""}`;
}

/**
 * A rejected line of a proxies file (`url [tier=NAME] [key=value ...]`) as shown: its url as
 * `redactProxyUrl` shows it; but only up to where a password could start (`redactUnparsed`) when
 * a later word holds an `@` — a password with a space in it would have run into that word.
 */
export function redactProxyLine(line: string): string {
  const [url = "", ...rest] = line.trim().split(/\s+/);
  return rest.some((w) => w.includes("@")) ? redactUnparsed(url) : redactProxyUrl(url);
}

/** A path segment or query key shown as it is: a short lowercase word (`download`, `socks5.txt`, `v2`). */
function plainWord(s: string): boolean {
  return s.length <= 24 && /^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$/.test(s) && (s.match(/[0-9]/g) ?? []).length <= 2;
}

/**
 * A source's list URL as shown (ListSources, `source list`, the status page): scheme, host, port
 * and the path, each segment that is not a short lowercase word (it could be a token) as `***`,
 * the query's keys likewise and every value as `***`. No username, password or fragment.
 */
export function redactSourceUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return HIDDEN;
  }
  const path = url.pathname
    .split("/")
    .map((s) => (s === "" || plainWord(s) ? s : HIDDEN))
    .join("/");
  const keys = [...url.searchParams.keys()].map((k) => `${plainWord(k) ? k : HIDDEN}=${HIDDEN}`);
  return `${url.protocol}//${url.host}${path}${keys.length > 0 ? `?${keys.join("&")}` : ""}`;
}

/** What names a source (its 12-hex-digit id, or its URL) as shown: the id, or the URL as redactSourceUrl shows it. */
export function redactSourceKey(key: string): string {
  const k = key.trim();
  return /^[0-9a-f]{12}$/.test(k) ? k : redactSourceUrl(k);
}

/** Characters that end a username in free text (a new one may start after the quoting ones). */
const USERNAME_END = new Set([":", "/", '"', "'", "(", ")"]);
/** Characters after which a `user:password@` may start in free text. */
const USERINFO_AFTER = new Set(['"', "'", "(", "=", ",", ";"]);

/**
 * Where the password of a whitespace-free word starts (the index of its `:`), or -1: the first
 * `:`, not followed by `//`, that ends a username (no `:`, `/`, quote or parenthesis in it) which
 * starts the word, follows `://`, or follows `"`, `'`, `(`, `=`, `,` or `;`. One pass: hostile
 * text costs its length, never its square.
 */
function passwordColon(head: string): number {
  let started = true;
  for (let i = 0; i < head.length; i++) {
    const ch = head.charAt(i);
    if (ch === ":" && started && !head.startsWith("//", i + 1)) return i;
    if (USERNAME_END.has(ch)) started = USERINFO_AFTER.has(ch) || (ch === "/" && head.startsWith("://", i - 2));
    else if (USERINFO_AFTER.has(ch)) started = true;
  }
  return -1;
}

/** One word of free text with its password, if any, as `***`: from its `:` to the word's last `@`. */
function redactWord(word: string): string {
  const at = word.lastIndexOf("@");
  if (at < 0) return word;
  const colon = passwordColon(word.slice(0, at));
  return colon < 0 ? word : `${word.slice(0, colon + 1)}${HIDDEN}${word.slice(at)}`;
}

/**
 * Replace every password in free text (an error message, a log line) by `***`
 * (`http://user:***@host:port`): in each whitespace-free word, from the `:` after a username
 * (see passwordColon) to the word's LAST `@` — a password may hold `@`, `/` or quotes when it is
 * quoted as typed. A password is known by where it stands, so one with a space in it (a URL as
 * typed, not as stored) is not found whole: messages never quote what was typed.
 */
export function redactSecrets(text: string): string {
  return text.replace(/\S+/g, redactWord);
}
