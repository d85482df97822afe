import { hostFromDomain } from "../model/domain-key.js";
import { OUTCOME_KIND_NAMES } from "../model/model.js";
import type { OutcomeKindName } from "../model/model.js";
import { normalizePattern, patternMatches } from "../model/policy.js";
import { compilePattern } from "./patterns.js";
import type { ClassifyRules, RulesConfig, RulesOverride } from "./types.js";

/**
 * Classifier rules: the defaults, and per-host overrides chosen like domain policies (SPEC §5):
 * the exact host, else the longest matching `*.suffix` (subdomains only), else `*`.
 */

const KINDS: ReadonlySet<string> = new Set<OutcomeKindName>(OUTCOME_KIND_NAMES);

/** The built-in rules. Spread its lists to extend rather than replace them. */
export const DEFAULT_RULES: ClassifyRules = Object.freeze({
  captchaUrlPatterns: [/captcha/i, /\/challenge/i, /__cf_chl/i, /\/sorry\//i],
  loginUrlPatterns: [/\/(?:log[-_]?in|sign[-_]?in|auth)(?:[/?#.;]|$)/i],
  captchaBodyPatterns: [/\bcaptcha\b/i, /are you a robot/i, /not a robot/i, /unusual traffic/i, /verify you are (?:a )?human/i],
  slowDownBodyPatterns: [/slow down/i, /too many requests/i, /rate.?limit/i],
  statusKinds: {},
  proxyErrorHeaders: ["x-squid-error", "proxy-status"],
  markers: [],
  minBytes: 0,
  minSizeRatio: 0.25,
  minSamples: 10,
  sizeWindow: 101,
  placeholderKind: "BLOCKED",
  maxRetryAfterMs: 3_600_000,
  errorKinds: {},
});

function checkKind(kind: unknown, where: string): void {
  if (typeof kind !== "string" || !KINDS.has(kind)) throw new RangeError(`${where}: "${String(kind)}" is not an outcome kind`);
}

function checkNumber(value: number, name: string, min: number, max: number, integer: boolean): void {
  if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new RangeError(`${name} must be ${integer ? "an integer" : "a number"} in [${min}, ${max}], got ${value}`);
  }
}

/** `over` laid over `base` (lists replace, maps merge by key), validated. Throws RangeError. */
export function mergeRules(base: ClassifyRules, override: RulesOverride = {}): ClassifyRules {
  // A key given as undefined means "not set", not "unset the default".
  const over = Object.fromEntries(Object.entries(override).filter(([, v]) => v !== undefined)) as Partial<ClassifyRules>;
  const r: ClassifyRules = {
    ...base,
    ...over,
    captchaUrlPatterns: (over.captchaUrlPatterns ?? base.captchaUrlPatterns).map(compilePattern),
    loginUrlPatterns: (over.loginUrlPatterns ?? base.loginUrlPatterns).map(compilePattern),
    captchaBodyPatterns: (over.captchaBodyPatterns ?? base.captchaBodyPatterns).map(compilePattern),
    slowDownBodyPatterns: (over.slowDownBodyPatterns ?? base.slowDownBodyPatterns).map(compilePattern),
    proxyErrorHeaders: (over.proxyErrorHeaders ?? base.proxyErrorHeaders).map((h) => h.toLowerCase()),
    statusKinds: { ...base.statusKinds, ...over.statusKinds },
    errorKinds: { ...base.errorKinds, ...over.errorKinds },
  };
  for (const [status, kind] of Object.entries(r.statusKinds)) {
    checkNumber(Number(status), "statusKinds key", 100, 599, true);
    checkKind(kind, `statusKinds[${status}]`);
  }
  for (const [code, kind] of Object.entries(r.errorKinds)) checkKind(kind, `errorKinds[${code}]`);
  checkKind(r.placeholderKind, "placeholderKind");
  checkNumber(r.minBytes, "minBytes", 0, Number.MAX_SAFE_INTEGER, false);
  checkNumber(r.minSizeRatio, "minSizeRatio", 0, 1, false);
  checkNumber(r.minSamples, "minSamples", 1, Number.MAX_SAFE_INTEGER, true);
  checkNumber(r.sizeWindow, "sizeWindow", 1, 100_000, true);
  checkNumber(r.maxRetryAfterMs, "maxRetryAfterMs", 0, Number.MAX_SAFE_INTEGER, false);
  return Object.freeze(r);
}

/** Exact host beats `*.suffix` (longer first) beats `*`. */
function specificity(pattern: string): number {
  if (pattern === "*") return 0;
  if (pattern.startsWith("*.")) return pattern.length;
  return Number.MAX_SAFE_INTEGER;
}

/** A host as patterns see it: lowercase, no port, no trailing dot, punycode. */
export function ruleHost(host: string): string {
  try {
    return hostFromDomain(host);
  } catch {
    return host.trim().toLowerCase();
  }
}

interface Entry {
  readonly pattern: string;
  readonly specificity: number;
  readonly rules: ClassifyRules;
}

/** The rules of every host, resolved once when built. Throws on a bad pattern or value. */
export class RuleBook {
  /** `DEFAULT_RULES` with `config.defaults` laid over them. */
  readonly defaults: ClassifyRules;
  private readonly entries: readonly Entry[];

  constructor(config: RulesConfig = {}) {
    this.defaults = mergeRules(DEFAULT_RULES, config.defaults);
    const seen = new Set<string>();
    const entries: Entry[] = [];
    for (const [raw, over] of Object.entries(config.perDomain ?? {})) {
      const pattern = normalizePattern(raw);
      if (seen.has(pattern)) throw new RangeError(`perDomain names "${pattern}" twice`);
      seen.add(pattern);
      entries.push({ pattern, specificity: specificity(pattern), rules: mergeRules(this.defaults, over) });
    }
    this.entries = entries.sort((a, b) => b.specificity - a.specificity);
  }

  /** The defaults merged with the most specific `perDomain` entry matching `host`. */
  rulesFor(host: string): ClassifyRules {
    return this.ownRulesFor(host) ?? this.defaults;
  }

  /** The rules of the most specific `perDomain` entry matching `host`; undefined when none does. */
  ownRulesFor(host: string): ClassifyRules | undefined {
    const h = ruleHost(host);
    return this.entries.find((e) => patternMatches(e.pattern, h))?.rules;
  }
}
