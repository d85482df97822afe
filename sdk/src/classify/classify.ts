import type { OutcomeKindName } from "../model/model.js";
import { captchaBody, checkContent } from "./content.js";
import { header } from "./headers.js";
import { describePattern, findMatch } from "./patterns.js";
import { proxyMadeError } from "./proxy-origin.js";
import { parseRetryAfter } from "./retry-after.js";
import { DEFAULT_RULES } from "./rules.js";
import type { Classification, ClassifyRules, Expectations, ResponseFacts, SizeStats, TextPattern } from "./types.js";

/**
 * Classify one response into the outcome a worker reports (SPEC §2). In order:
 *
 * 1. a 4xx/5xx made by the proxy (`proxyErrorHeaders`) → PROXY_ERROR;
 * 2. `statusKinds[status]`, when set, decides alone;
 * 3. 2xx/3xx: the final URL (and a 3xx's `Location`) matching a captcha or login pattern →
 *    BLOCKED; for 2xx also a captcha body → BLOCKED, and a body under `minBytes`, far below the
 *    running median, or missing a marker → `placeholderKind`; otherwise SUCCESS;
 * 4. 407 → PROXY_ERROR; 429 → RATE_LIMITED; 403 → BLOCKED, or RATE_LIMITED when its body
 *    matches a slow-down pattern (a captcha body keeps it BLOCKED); other 4xx and 5xx →
 *    TARGET_ERROR.
 *
 * RATE_LIMITED carries `Retry-After` (seconds or HTTP date, capped at `maxRetryAfterMs`).
 */

/** What `classify` knows beyond the response. */
export interface ClassifyContext {
  /** The rules for the response's host; default `DEFAULT_RULES`. */
  readonly rules?: ClassifyRules;
  /** The running median of successful body sizes for this host (or page kind), if known. */
  readonly sizes?: SizeStats;
  /** Clock for an HTTP-date `Retry-After` (epoch ms); default `Date.now`. */
  readonly now?: () => number;
}

function result(facts: ResponseFacts, kind: OutcomeKindName, reason: string): Classification {
  return { kind, httpStatus: facts.status, retryAfterMs: 0, reason };
}

function rateLimited(facts: ResponseFacts, rules: ClassifyRules, now: () => number, why: string): Classification {
  const raw = header(facts, "retry-after");
  const ms = parseRetryAfter(raw, now());
  if (raw === undefined) return result(facts, "RATE_LIMITED", `${why} without Retry-After`);
  if (ms === undefined) return result(facts, "RATE_LIMITED", `${why} with invalid Retry-After ${JSON.stringify(raw)}`);
  const capped = Math.min(ms, rules.maxRetryAfterMs);
  const form = /^\s*\d+\s*$/.test(raw) ? "" : " (HTTP date)";
  const cap = capped < ms ? `, capped to ${Math.ceil(capped / 1000)} s` : "";
  return { ...result(facts, "RATE_LIMITED", `${why} with Retry-After ${Math.ceil(ms / 1000)} s${form}${cap}`), retryAfterMs: capped };
}

/** True when `requestUrl` itself matches: the worker asked for that page, it was not sent there. */
function urlHit(patterns: readonly TextPattern[], url: string, requestUrl: string | undefined): TextPattern | undefined {
  if (requestUrl !== undefined && findMatch(patterns, requestUrl) !== undefined) return undefined;
  return findMatch(patterns, url);
}

function urlVerdict(facts: ResponseFacts, rules: ClassifyRules): Classification | undefined {
  const targets: [string, string][] = [["final URL", facts.url]];
  const location = facts.status >= 300 && facts.status < 400 ? header(facts, "location") : undefined;
  if (location !== undefined) {
    let resolved = location;
    try {
      resolved = new URL(location, facts.url).href;
    } catch {
      // keep the raw value: patterns still apply to it
    }
    targets.push([`${facts.status} Location`, resolved]);
  }
  for (const [what, url] of targets) {
    const captcha = urlHit(rules.captchaUrlPatterns, url, facts.requestUrl);
    if (captcha !== undefined) return result(facts, "BLOCKED", `${what} matches captcha pattern ${describePattern(captcha)}`);
    const login = urlHit(rules.loginUrlPatterns, url, facts.requestUrl);
    if (login !== undefined) return result(facts, "BLOCKED", `${what} matches login pattern ${describePattern(login)}`);
  }
  return undefined;
}

/** Classify a response (see the module comment for the order of the rules). Pure. */
export function classify(response: ResponseFacts, expectations: Expectations = {}, context: ClassifyContext = {}): Classification {
  const rules = context.rules ?? DEFAULT_RULES;
  const now = context.now ?? Date.now;
  const status = response.status;

  const byProxy = proxyMadeError(response, rules.proxyErrorHeaders);
  if (byProxy) return result(response, byProxy.kind, byProxy.reason);

  const mapped = Object.hasOwn(rules.statusKinds, status) ? rules.statusKinds[status] : undefined;
  if (mapped !== undefined) {
    const why = `${status} mapped to ${mapped} by rule`;
    return mapped === "RATE_LIMITED" ? rateLimited(response, rules, now, why) : result(response, mapped, why);
  }

  if (status >= 200 && status < 400) {
    const byUrl = urlVerdict(response, rules);
    if (byUrl) return byUrl;
    if (status < 300) {
      const byContent = checkContent(response, rules, expectations, context.sizes);
      if (byContent) return result(response, byContent.kind, byContent.reason);
    }
    return result(response, "SUCCESS", `${status}`);
  }
  if (status === 407) return result(response, "PROXY_ERROR", "407 proxy authentication required");
  if (status === 429) return rateLimited(response, rules, now, "429");
  if (status === 403) {
    const captcha = captchaBody(response, rules);
    if (captcha) return result(response, captcha.kind, captcha.reason);
    const slow = response.body === undefined ? undefined : findMatch(rules.slowDownBodyPatterns, response.body);
    if (slow !== undefined) return rateLimited(response, rules, now, `403 body matches slow-down pattern ${describePattern(slow)},`);
    return result(response, "BLOCKED", "403 block page");
  }
  if (status >= 400 && status < 600) return result(response, "TARGET_ERROR", `${status} from the target`);
  return result(response, "TARGET_ERROR", `unexpected status ${status}`);
}
