import type { OutcomeKindName } from "../model/model.js";
import { findMissingMarker } from "./markers.js";
import { describePattern, findMatch } from "./patterns.js";
import type { ClassifyRules, Expectations, ResponseFacts, SizeStats } from "./types.js";

/**
 * Content checks of a 2xx page: a captcha page, a body too small (absolute, or far below the
 * running median), a missing marker. Internal to the classifier.
 */

/** Why a page is not a success. */
export interface ContentVerdict {
  readonly kind: OutcomeKindName;
  readonly reason: string;
}

const TEXTUAL = /^(text\/|application\/(json|xml|xhtml|javascript)|[^;]*\+(json|xml))/i;

/**
 * Whether a body of this content type is text the classifier reads (HTML, JSON, XML, scripts);
 * others are classified by status and size only. No content type counts as HTML.
 */
export function isTextual(contentType: string | undefined): boolean {
  return TEXTUAL.test(contentType ?? "text/html");
}

/** The body's size in bytes: `bodyBytes`, else the UTF-8 length of `body`, else undefined. */
export function bodySize(facts: ResponseFacts): number | undefined {
  if (facts.bodyBytes !== undefined) return facts.bodyBytes;
  return facts.body === undefined ? undefined : Buffer.byteLength(facts.body, "utf8");
}

/** The body text is less than the whole body (`bodyBytes` says more came). */
function truncated(facts: ResponseFacts, body: string): boolean {
  return facts.bodyBytes !== undefined && Buffer.byteLength(body, "utf8") < facts.bodyBytes;
}

/** A captcha page by its body, for 2xx and 403 responses. */
export function captchaBody(facts: ResponseFacts, rules: ClassifyRules, lower?: string): ContentVerdict | undefined {
  if (facts.body === undefined) return undefined;
  const p = findMatch(rules.captchaBodyPatterns, facts.body, lower);
  return p === undefined ? undefined : { kind: "BLOCKED", reason: `${facts.status} body matches captcha pattern ${describePattern(p)}` };
}

/** The first failed content check of a 2xx page, or undefined when it looks like real content. */
export function checkContent(
  facts: ResponseFacts,
  rules: ClassifyRules,
  expectations: Expectations,
  sizes: SizeStats | undefined,
): ContentVerdict | undefined {
  const lower = facts.body?.toLowerCase();
  const captcha = captchaBody(facts, rules, lower);
  if (captcha) return captcha;
  const placeholder = rules.placeholderKind;
  const bytes = bodySize(facts);
  if (bytes !== undefined) {
    const minBytes = expectations.minBytes ?? rules.minBytes;
    if (bytes < minBytes) return { kind: placeholder, reason: `body of ${bytes} B is below minBytes ${minBytes} B` };
    if (rules.minSizeRatio > 0 && sizes !== undefined && sizes.samples >= rules.minSamples) {
      const floor = rules.minSizeRatio * sizes.median;
      if (bytes < floor) {
        return {
          kind: placeholder,
          reason: `body of ${bytes} B is far below the median ${sizes.median} B of ${sizes.samples} pages (< ${rules.minSizeRatio} × median)`,
        };
      }
    }
  }
  const markers = expectations.markers ?? rules.markers;
  // a marker not found in a truncated body may sit in the part not given: not judged missing
  if (markers.length > 0 && facts.body !== undefined && !truncated(facts, facts.body)) {
    const missing = findMissingMarker(facts.body, markers, lower);
    if (missing !== undefined) return { kind: placeholder, reason: `marker ${JSON.stringify(missing)} missing from the body` };
  }
  return undefined;
}
