import { bodySize } from "./content.js";
import { classify } from "./classify.js";
import { classifyError, type ErrorContext } from "./errors.js";
import type { DomainPolicySpec } from "../model/model.js";
import { PolicyRules } from "./policy-rules.js";
import { RuleBook, ruleHost } from "./rules.js";
import { SizeBook } from "./size-book.js";
import type { Classification, ClassifyRules, Expectations, ResponseFacts, RulesConfig, SizeStats } from "./types.js";

/**
 * A classifier for one worker process: the rules per host, and the running median of successful
 * body sizes per host (or per host and `Expectations.sizeKey`). Only 2xx pages classified SUCCESS
 * feed the median, so a wave of placeholder pages cannot drag it down.
 */

/** Options of a `Classifier`: the rules, a clock, and how many size medians to keep. */
export interface ClassifierOptions extends RulesConfig {
  /** Clock (epoch ms) for HTTP-date `Retry-After` values; default `Date.now`. */
  readonly now?: () => number;
  /** How many hosts (× size keys) keep a median; the least recently used is dropped. Default 10 000. */
  readonly maxSizeKeys?: number;
  /**
   * The broker's domain policies as this worker knows them now (the client passes its pool
   * snapshot's). A host matched by no `perDomain` entry is classified by the response
   * expectations of the policy that applies to it, if it has any: its block markers and
   * slow-down patterns join the defaults', its required markers and minimum size apply to a call
   * that gives no `markers` / `minBytes` of its own.
   */
  readonly policies?: () => readonly DomainPolicySpec[] | undefined;
}

/** The host a response is filed under: the requested URL's (the lease's domain), else the final URL's. */
function hostOf(response: ResponseFacts): string {
  for (const url of [response.requestUrl, response.url]) {
    if (url === undefined) continue;
    try {
      return ruleHost(new URL(url).hostname);
    } catch {
      // not a URL: try the next one
    }
  }
  return "";
}

/** Decides the outcome of each request made through a leased proxy. Not safe to share across processes. */
export class Classifier {
  private readonly book: RuleBook;
  private readonly policyRules: PolicyRules | undefined;
  private readonly sizes: SizeBook;
  private readonly now: () => number;

  /** Throws RangeError / InvalidInputError for a bad pattern or value in the rules. */
  constructor(options: ClassifierOptions = {}) {
    this.book = new RuleBook(options);
    this.policyRules = options.policies === undefined ? undefined : new PolicyRules(options.policies);
    this.sizes = new SizeBook(options.maxSizeKeys);
    this.now = options.now ?? Date.now;
  }

  /** The rules that apply to `host`: its `perDomain` entry's, else its policy's expectations', else the defaults. */
  rulesFor(host: string): ClassifyRules {
    const h = ruleHost(host);
    return this.book.ownRulesFor(h) ?? this.policyRules?.rulesFor(h, this.book.defaults) ?? this.book.defaults;
  }

  /** Classify a response and, when it is a 2xx SUCCESS, feed its size to the median. */
  classify(response: ResponseFacts, expectations: Expectations = {}): Classification {
    const host = hostOf(response);
    const rules = this.rulesFor(host);
    const sizes = this.sizes.stats(host, expectations.sizeKey);
    const c = classify(response, expectations, { rules, now: this.now, ...(sizes === undefined ? {} : { sizes }) });
    const bytes = bodySize(response);
    if (c.kind === "SUCCESS" && response.status >= 200 && response.status < 300 && bytes !== undefined) {
      this.sizes.record(host, expectations.sizeKey, bytes, rules.sizeWindow);
    }
    return c;
  }

  /** Classify an error raised instead of a response; `targetHost` tells a target DNS failure from the proxy's. */
  classifyError(err: unknown, context: Omit<ErrorContext, "rules"> = {}): Classification {
    const rules = context.targetHost === undefined ? this.book.defaults : this.book.rulesFor(context.targetHost);
    return classifyError(err, { ...context, rules });
  }

  /** The running median for `host` (and `sizeKey`), if any size is known. */
  sizeStats(host: string, sizeKey?: string): SizeStats | undefined {
    return this.sizes.stats(ruleHost(host), sizeKey);
  }

  /** Forget the sizes of `host` (every size key) — e.g. after a redesign — or of every host. */
  resetSizes(host?: string): void {
    this.sizes.reset(host === undefined ? undefined : ruleHost(host));
  }
}
