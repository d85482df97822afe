import { isIP } from "node:net";

/**
 * The exit IP a health check answer shows (SPEC §11): a JSON object with `ip` or `origin` (as
 * echo services answer; `origin` may list addresses, "a, b": the first is the client's), or a
 * body that is one address. Anything else shows none (""). Pure.
 */
export function exitIpOf(body: string): string {
  const text = body.trim();
  if (text === "") return "";
  if (text.startsWith("{")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return "";
    }
    if (typeof parsed !== "object" || parsed === null) return "";
    const record = parsed as Record<string, unknown>;
    for (const field of ["ip", "origin"]) {
      const value = record[field];
      if (typeof value === "string") {
        const first = canonical(value.split(",")[0] ?? "");
        if (first !== "") return first;
      }
    }
    return "";
  }
  return canonical(text);
}

/** One address in its canonical text ("" when `text` is not one): IPv4 as is, IPv6 lowercased. */
function canonical(text: string): string {
  const t = text.trim().replace(/^\[|\]$/g, "");
  const v = isIP(t);
  if (v === 4) return t;
  if (v === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(t);
    if (mapped?.[1] !== undefined) return mapped[1];
    return t.toLowerCase();
  }
  return "";
}
