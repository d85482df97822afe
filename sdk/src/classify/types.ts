import type { OutcomeKindName } from "../model/model.js";

/**
 * The shapes of the response classifier: what it reads of a response, what a call may expect of
 * it, the rules it applies, and what it answers. Pure data; no I/O.
 */

/** What the classifier needs of a response; the SDK builds it from undici/fetch responses. */
export interface ResponseFacts {
  readonly status: number;
  /** Final URL after redirects. */
  readonly url: string;
  /** Header names in lowercase. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Body text, may be truncated by the caller (then give `bodyBytes`; a marker not found in a
   * truncated body is not judged missing).
   */
  readonly body?: string;
  /** Size of the whole body in bytes; when absent, the UTF-8 length of `body` is used. */
  readonly bodyBytes?: number;
  /**
   * The URL the worker asked for, before redirects. When given, its host selects the rules and
   * the size median (the lease's domain), and a URL rule does not fire when the requested URL
   * itself matches it (a crawler that fetches `/login` on purpose is not being sent there).
   */
  readonly requestUrl?: string;
}

/** Per call, overriding the rules for this request. */
export interface Expectations {
  /** Every marker must appear in the body (text, or `#id` / `.class` / `css:tag.class`). */
  readonly markers?: readonly string[];
  /** A 2xx body smaller than this is a placeholder page. */
  readonly minBytes?: number;
  /**
   * Which running median the body size is compared with and fed to: pages of one kind
   * (`"product"`, `"listing"`) share one per host. Default: one median per host.
   */
  readonly sizeKey?: string;
}

/** The classifier's answer: the outcome to report and why. */
export interface Classification {
  readonly kind: OutcomeKindName;
  /** 0 when there was no response. */
  readonly httpStatus: number;
  /** 0 = none. Set only for `RATE_LIMITED`. */
  readonly retryAfterMs: number;
  /** Human-readable, e.g. "429 with Retry-After 30 s", "final URL matches /captcha/i". */
  readonly reason: string;
}

/** A RegExp, or a string matched case-insensitively as a substring. */
export type TextPattern = RegExp | string;

/** A running median of body sizes, as far as it is known. */
export interface SizeStats {
  readonly median: number;
  /** How many sizes the median is taken over. */
  readonly samples: number;
}

/**
 * The rules for one host. `rulesFor(host)` merges them; lists replace, maps (`statusKinds`,
 * `errorKinds`) merge key by key.
 */
export interface ClassifyRules {
  /** The final URL of a 2xx/3xx (or a 3xx's `Location`) matching one of these → BLOCKED. */
  readonly captchaUrlPatterns: readonly TextPattern[];
  /** Same for login pages → BLOCKED. */
  readonly loginUrlPatterns: readonly TextPattern[];
  /** A 2xx or 403 body matching one of these is a captcha page → BLOCKED. */
  readonly captchaBodyPatterns: readonly TextPattern[];
  /**
   * A 403 body matching one of these means "slow down" → RATE_LIMITED (default: "slow down",
   * "too many requests", "rate limit").
   */
  readonly slowDownBodyPatterns: readonly TextPattern[];
  /**
   * An explicit kind for a status code, replacing every built-in rule for it (including the
   * content checks of 2xx/3xx), e.g. `{ 503: "RATE_LIMITED" }`.
   */
  readonly statusKinds: Readonly<Record<number, OutcomeKindName>>;
  /**
   * Response headers that mark a 4xx/5xx as made by the proxy, not the target → PROXY_ERROR
   * (a DNS failure the proxy reports → TARGET_ERROR). `proxy-status` (RFC 9209) counts only
   * with an `error` parameter.
   */
  readonly proxyErrorHeaders: readonly string[];
  /** Markers every 2xx body must contain (see `Expectations.markers`). */
  readonly markers: readonly string[];
  /** A 2xx body smaller than this (bytes) is a placeholder page; 0 = off. */
  readonly minBytes: number;
  /** A 2xx body below `minSizeRatio` × the running median is a placeholder page; 0 = off. */
  readonly minSizeRatio: number;
  /** How many sizes must be known before the median check applies. */
  readonly minSamples: number;
  /** How many recent sizes the median is taken over. */
  readonly sizeWindow: number;
  /** What a placeholder page (too small, marker missing) is reported as. */
  readonly placeholderKind: OutcomeKindName;
  /** Retry-After values above this are capped (ms). */
  readonly maxRetryAfterMs: number;
  /**
   * An explicit kind for an error `code` (`ECONNRESET`, `UND_ERR_SOCKS5_REPLY_4`) or `name`
   * (`TimeoutError`), replacing the built-in rule for it.
   */
  readonly errorKinds: Readonly<Record<string, OutcomeKindName>>;
}

/** Any subset of the rules, laid over the defaults; a key given as undefined is not set. */
export type RulesOverride = { readonly [K in keyof ClassifyRules]?: ClassifyRules[K] | undefined };

/** Rules for all hosts and per host pattern (`shop.example.com`, `*.example.com`, `*`). */
export interface RulesConfig {
  /** Laid over `DEFAULT_RULES`. */
  readonly defaults?: RulesOverride;
  /** The most specific matching pattern's override is laid over the defaults. */
  readonly perDomain?: Readonly<Record<string, RulesOverride>>;
}
