import { expectsNothing } from "../model/expectations.js";
import type { PolicyExpectations } from "../model/expectations.js";
import type { DomainPolicySpec } from "../model/model.js";
import { findPolicy } from "../model/policy.js";
import { mergeRules } from "./rules.js";
import type { ClassifyRules } from "./types.js";

/**
 * Classifier rules from the broker's domain policies (their response expectations, docs/spec.md
 * §10): the defaults, with a policy's block markers added to the captcha body patterns, its
 * slow-down patterns added to those, its required markers as the markers and its minimum size as
 * `minBytes`. Internal to the classifier.
 */

/** The rules `e` makes of `defaults`. Texts stay texts (case-insensitive substrings). */
export function rulesOfExpectations(defaults: ClassifyRules, e: PolicyExpectations): ClassifyRules {
  return mergeRules(defaults, {
    captchaBodyPatterns: [...defaults.captchaBodyPatterns, ...e.blockMarkers],
    slowDownBodyPatterns: [...defaults.slowDownBodyPatterns, ...e.slowDownPatterns],
    ...(e.requiredMarkers.length > 0 ? { markers: e.requiredMarkers } : {}),
    ...(e.minBytes > 0 ? { minBytes: e.minBytes } : {}),
  });
}

/** The rules of each policy with expectations, built once per policy object. */
export class PolicyRules {
  private readonly built = new WeakMap<DomainPolicySpec, ClassifyRules>();

  constructor(private readonly source: () => readonly DomainPolicySpec[] | undefined) {}

  /** The rules of the policy that applies to `host`, when it expects something; else undefined. */
  rulesFor(host: string, defaults: ClassifyRules): ClassifyRules | undefined {
    const policies = this.source();
    if (policies === undefined || policies.length === 0) return undefined;
    const p = findPolicy(policies, host);
    if (p === undefined || p.expectations === undefined || expectsNothing(p.expectations)) return undefined;
    let rules = this.built.get(p);
    if (rules === undefined) {
      rules = rulesOfExpectations(defaults, p.expectations);
      this.built.set(p, rules);
    }
    return rules;
  }
}
