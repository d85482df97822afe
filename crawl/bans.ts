/**
 * When the sites banned an IP, replayed from their request log: every 429 in the log is one
 * violation (a banned IP gets block or captcha pages, never a 429), and the `violationsToBan`-th
 * violation of an IP at a site within `violationWindowMs` bans it and starts the count again —
 * the sites' own rule (sites.ts), so the times are those their `bans` counter counted.
 */
import type { RequestLogEntry, SiteRules } from "./sites.js";

export type BanRule = Pick<SiteRules, "violationsToBan" | "violationWindowMs">;

/** Epoch ms of every ban in `log`, in order; `ruleOf` gives a site's rule by its host. */
export function banTimes(log: readonly RequestLogEntry[], ruleOf: (site: string) => BanRule | undefined): number[] {
  const violations = new Map<string, number[]>();
  const bans: number[] = [];
  for (const e of [...log].filter((x) => x.answer === "429").sort((a, b) => a.start - b.start)) {
    const rule = ruleOf(e.site);
    if (rule === undefined) continue;
    const key = `${e.site} ${e.ip}`;
    const recent = (violations.get(key) ?? []).filter((t) => e.start - t < rule.violationWindowMs);
    recent.push(e.start);
    if (recent.length >= rule.violationsToBan) {
      bans.push(e.start);
      violations.set(key, []);
    } else {
      violations.set(key, recent);
    }
  }
  return bans;
}
