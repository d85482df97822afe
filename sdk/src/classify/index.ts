/**
 * The response classifier of the SDK: turns a response or an error into the outcome a worker
 * reports when it releases a lease (SPEC §2, §7).
 */
export type {
  Classification,
  ClassifyRules,
  Expectations,
  ResponseFacts,
  RulesConfig,
  RulesOverride,
  SizeStats,
  TextPattern,
} from "./types.js";
export { classify } from "./classify.js";
export type { ClassifyContext } from "./classify.js";
export { classifyError } from "./errors.js";
export type { ErrorContext } from "./errors.js";
export { Classifier } from "./classifier.js";
export type { ClassifierOptions } from "./classifier.js";
export { DEFAULT_RULES, RuleBook, mergeRules } from "./rules.js";
export { rulesOfExpectations } from "./policy-rules.js";
export { isTextual } from "./content.js";
export { parseHttpDate, parseRetryAfter } from "./retry-after.js";
export { RunningMedian } from "./size-median.js";
export { parseMarker } from "./markers.js";
export type { ParsedMarker } from "./markers.js";
