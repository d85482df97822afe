/**
 * Proxy passwords never leave the broker except in a worker's own lease and in the pool snapshot
 * (docs/spec.md §8): everything else that shows a proxy URL — ListProxies, AddProxies' rejected
 * entries, error details, log lines — goes through these.
 */

/** `scheme://user:password@` (or `user:password@` without a scheme) at the start of an authority. */
const USERINFO = /((?:^|[\s"'(=,;]|[a-z][a-z0-9+.-]*:\/\/)[^\s:@/"'()]*):[^\s@/"'()]*@/gi;

/** Replace every password in `text` by `***` (`http://user:***@host:port`). */
export function redactSecrets(text: string): string {
  return text.replace(USERINFO, "$1:***@");
}

/**
 * A source's list URL as shown (ListSources, the status page): its password and the values of its
 * query (where providers put API keys) replaced by `***`.
 */
export function redactSourceUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    for (const key of new Set(u.searchParams.keys())) u.searchParams.set(key, "***");
    return u.toString().replaceAll("%2A%2A%2A", "***");
  } catch {
    return redactSecrets(url);
  }
}
