/** `host:port` or `[v6]:port` as host (without brackets) and port; undefined when it is neither. */
export function splitHostPort(address: string): [string, number] | undefined {
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(address.trim());
  const port = Number(m?.[2]);
  return m === null || port > 65_535 ? undefined : [m[1] ?? "", port];
}
