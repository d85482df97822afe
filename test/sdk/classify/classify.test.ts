import { describe, expect, it } from "vitest";
import { DEFAULT_RULES, classify, mergeRules } from "../../../sdk/src/classify/index.js";
import type { ResponseFacts } from "../../../sdk/src/classify/index.js";
import { FAKE_EPOCH_MS } from "../../support/fake-clock.js";

/** Status rules, URL rules and content rules of `classify` (the pure function). */

const PAGE = `<html><body><div id="main"><h1 class="title big">Widget</h1><span class="price">9.99</span></div></body></html>`;
const res = (over: Partial<ResponseFacts> = {}): ResponseFacts => ({
  status: 200,
  url: "https://shop.example.com/p/1",
  headers: {},
  body: PAGE,
  ...over,
});
const now = (): number => FAKE_EPOCH_MS;

describe("status codes", () => {
  it("2xx with an ordinary page is SUCCESS", () => {
    expect(classify(res())).toEqual({ kind: "SUCCESS", httpStatus: 200, retryAfterMs: 0, reason: "200" });
    expect(classify(res({ status: 204, body: "" })).kind).toBe("SUCCESS");
  });

  it("3xx to an ordinary page is SUCCESS; body checks do not apply to a redirect", () => {
    expect(classify(res({ status: 301, headers: { location: "/p/2" }, body: "" })).kind).toBe("SUCCESS");
    expect(classify(res({ status: 302, body: "" }), { minBytes: 100, markers: ["#main"] }).kind).toBe("SUCCESS");
  });

  it("429 is RATE_LIMITED", () => {
    const c = classify(res({ status: 429, body: "Too Many Requests" }));
    expect(c).toMatchObject({ kind: "RATE_LIMITED", httpStatus: 429, retryAfterMs: 0 });
    expect(c.reason).toBe("429 without Retry-After");
  });

  it("403 with a block page is BLOCKED by default", () => {
    const c = classify(res({ status: 403, body: "<h1>Access denied</h1>" }));
    expect(c).toMatchObject({ kind: "BLOCKED", httpStatus: 403, reason: "403 block page" });
  });

  it("403 'slow down' becomes RATE_LIMITED only with a slow-down pattern, with its Retry-After", () => {
    const slow = res({ status: 403, body: "Please slow down, you are making requests too fast", headers: { "retry-after": "20" } });
    // The default patterns know "slow down"; without slow-down patterns it is a block page.
    expect(classify(slow, {}, { now })).toMatchObject({ kind: "RATE_LIMITED", httpStatus: 403, retryAfterMs: 20_000 });
    expect(classify(slow, {}, { rules: mergeRules(DEFAULT_RULES, { slowDownBodyPatterns: [] }) }).kind).toBe("BLOCKED");
    const rules = mergeRules(DEFAULT_RULES, { slowDownBodyPatterns: ["slow down", /too fast/i] });
    const c = classify(slow, {}, { rules, now });
    expect(c).toMatchObject({ kind: "RATE_LIMITED", httpStatus: 403, retryAfterMs: 20_000 });
    expect(c.reason).toMatch(/slow-down pattern "slow down"/);
    // A block page on the same rules stays BLOCKED.
    expect(classify(res({ status: 403, body: "Access denied" }), {}, { rules }).kind).toBe("BLOCKED");
  });

  it("403 with a captcha body is BLOCKED even when a slow-down pattern also matches", () => {
    const rules = mergeRules(DEFAULT_RULES, { slowDownBodyPatterns: ["slow down"] });
    const c = classify(res({ status: 403, body: "Slow down! Solve the CAPTCHA to continue" }), {}, { rules });
    expect(c.kind).toBe("BLOCKED");
    expect(c.reason).toMatch(/captcha pattern/);
  });

  it("407 is PROXY_ERROR", () => {
    expect(classify(res({ status: 407, body: "" }))).toMatchObject({ kind: "PROXY_ERROR", httpStatus: 407 });
  });

  it("404, other 4xx and 5xx from the target are TARGET_ERROR", () => {
    for (const status of [404, 410, 400, 500, 502, 503, 504]) {
      const c = classify(res({ status, body: "error" }));
      expect(c, String(status)).toMatchObject({ kind: "TARGET_ERROR", httpStatus: status });
      expect(c.reason).toBe(`${status} from the target`);
    }
  });

  it("503 is TARGET_ERROR by default and RATE_LIMITED when configured (with its Retry-After)", () => {
    const r = res({ status: 503, body: "busy", headers: { "retry-after": "120" } });
    expect(classify(r).kind).toBe("TARGET_ERROR");
    const rules = mergeRules(DEFAULT_RULES, { statusKinds: { 503: "RATE_LIMITED" } });
    expect(classify(r, {}, { rules, now })).toEqual({
      kind: "RATE_LIMITED",
      httpStatus: 503,
      retryAfterMs: 120_000,
      reason: "503 mapped to RATE_LIMITED by rule with Retry-After 120 s",
    });
  });

  it("statusKinds replaces the built-in rule, including the content checks of a 2xx", () => {
    const rules = mergeRules(DEFAULT_RULES, { statusKinds: { 404: "SUCCESS", 200: "TARGET_ERROR" } });
    expect(classify(res({ status: 404, body: "gone" }), {}, { rules }).kind).toBe("SUCCESS");
    expect(classify(res(), {}, { rules }).kind).toBe("TARGET_ERROR");
  });
});

describe("error responses made by the proxy", () => {
  it("a 5xx or 403 with X-Squid-Error is PROXY_ERROR, not the target's", () => {
    const c = classify(res({ status: 503, headers: { "x-squid-error": "ERR_CONNECT_FAIL 111" }, body: "" }));
    expect(c).toMatchObject({ kind: "PROXY_ERROR", httpStatus: 503 });
    expect(c.reason).toMatch(/ERR_CONNECT_FAIL/);
    expect(classify(res({ status: 403, headers: { "x-squid-error": "ERR_ACCESS_DENIED 0" }, body: "" })).kind).toBe("PROXY_ERROR");
  });

  it("a DNS failure reported by the proxy is TARGET_ERROR", () => {
    expect(classify(res({ status: 503, headers: { "x-squid-error": "ERR_DNS_FAIL 0" }, body: "" })).kind).toBe("TARGET_ERROR");
    const ps = { "proxy-status": 'gw.example.net; error=dns_error; rcode="NXDOMAIN"' };
    expect(classify(res({ status: 502, headers: ps, body: "" })).kind).toBe("TARGET_ERROR");
  });

  it("Proxy-Status counts only with an error parameter", () => {
    const withError = { "proxy-status": "gw.example.net; error=connection_refused" };
    expect(classify(res({ status: 502, headers: withError, body: "" })).kind).toBe("PROXY_ERROR");
    const relayed = { "proxy-status": "gw.example.net; received-status=502" };
    expect(classify(res({ status: 502, headers: relayed, body: "" })).kind).toBe("TARGET_ERROR");
  });

  it("a 2xx is never blamed on the proxy", () => {
    expect(classify(res({ headers: { "proxy-status": "gw.example.net; error=http_response_incomplete" } })).kind).toBe("SUCCESS");
  });

  it("the headers are configurable (empty list = off)", () => {
    const rules = mergeRules(DEFAULT_RULES, { proxyErrorHeaders: [] });
    const r = res({ status: 503, headers: { "x-squid-error": "ERR_CONNECT_FAIL 111" }, body: "" });
    expect(classify(r, {}, { rules }).kind).toBe("TARGET_ERROR");
  });
});

describe("captcha and login redirects", () => {
  it("a 200 whose final URL matches a captcha pattern is BLOCKED", () => {
    const c = classify(res({ url: "https://shop.example.com/captcha?return=/p/1" }));
    expect(c).toMatchObject({ kind: "BLOCKED", httpStatus: 200 });
    expect(c.reason).toBe("final URL matches captcha pattern /captcha/i");
    expect(classify(res({ url: "https://www.google.com/sorry/index?continue=x" })).kind).toBe("BLOCKED");
    expect(classify(res({ url: "https://shop.example.com/challenge?x=1" })).kind).toBe("BLOCKED");
  });

  it("a 200 whose final URL is a login page is BLOCKED", () => {
    for (const url of [
      "https://shop.example.com/login?next=/p/1",
      "https://shop.example.com/users/sign_in",
      "https://shop.example.com/auth/start",
    ]) {
      const c = classify(res({ url }));
      expect(c.kind, url).toBe("BLOCKED");
      expect(c.reason).toMatch(/login pattern/);
    }
  });

  it("URL patterns do not fire on ordinary paths that merely contain the words", () => {
    for (const url of [
      "https://shop.example.com/authors/jane",
      "https://shop.example.com/blog/ice-bucket-challenge",
      "https://shop.example.com/logistics",
    ]) {
      expect(classify(res({ url })).kind, url).toBe("SUCCESS");
    }
  });

  it("a 3xx whose Location points to a captcha page is BLOCKED (redirect not followed)", () => {
    const c = classify(res({ status: 302, headers: { location: "/distil_r_captcha.html?url=/p/1" }, body: "" }));
    expect(c.kind).toBe("BLOCKED");
    expect(c.reason).toMatch(/^302 Location matches captcha pattern/);
  });

  it("a Location header outside 3xx is not a redirect", () => {
    expect(classify(res({ status: 201, headers: { location: "/captcha-settings/1" } })).kind).toBe("SUCCESS");
  });

  it("a login page the worker asked for itself (requestUrl) is not a redirect to login", () => {
    const url = "https://shop.example.com/login";
    expect(classify(res({ url })).kind).toBe("BLOCKED");
    expect(classify(res({ url, requestUrl: url })).kind).toBe("SUCCESS");
    expect(classify(res({ url, requestUrl: "https://shop.example.com/account" })).kind).toBe("BLOCKED");
  });

  it("URL patterns are configurable: string patterns match case-insensitively", () => {
    const rules = mergeRules(DEFAULT_RULES, { captchaUrlPatterns: ["/Verify-Human"], loginUrlPatterns: [] });
    expect(classify(res({ url: "https://shop.example.com/verify-human?r=1" }), {}, { rules }).reason).toBe(
      'final URL matches captcha pattern "/verify-human"',
    );
    expect(classify(res({ url: "https://shop.example.com/login" }), {}, { rules }).kind).toBe("SUCCESS");
  });
});

describe("captcha pages served with 200", () => {
  it("a 200 whose body is a captcha page is BLOCKED", () => {
    for (const body of [
      "<title>Attention Required</title><div id='px-captcha'></div>",
      "Our systems have detected unusual traffic from your computer network.",
      "Sorry, we just need to make sure you're not a robot.",
    ]) {
      const c = classify(res({ body }));
      expect(c.kind, body).toBe("BLOCKED");
      expect(c.reason).toMatch(/^200 body matches captcha pattern/);
    }
  });

  it("a page that merely embeds a reCAPTCHA widget is not a captcha page", () => {
    const body = `${PAGE}<form><div class="g-recaptcha" data-sitekey="x"></div></form><script src="https://www.google.com/recaptcha/api.js"></script>`;
    expect(classify(res({ body })).kind).toBe("SUCCESS");
  });

  it("body patterns are not checked on 404/5xx and are configurable", () => {
    expect(classify(res({ status: 404, body: "captcha" })).kind).toBe("TARGET_ERROR");
    const rules = mergeRules(DEFAULT_RULES, { captchaBodyPatterns: [] });
    expect(classify(res({ body: "are you a robot?" }), {}, { rules }).kind).toBe("SUCCESS");
  });
});

describe("markers", () => {
  it("a 200 with every marker present is SUCCESS", () => {
    const markers = ["Widget", "#main", ".price", ".title.big", "css:h1", "css:span.price", "css:div#main", "text:9.99"];
    expect(classify(res(), { markers }).kind).toBe("SUCCESS");
  });

  it("a 200 missing a text marker is BLOCKED (placeholder page) and names it", () => {
    const c = classify(res(), { markers: ["Widget", "Add to cart"] });
    expect(c).toMatchObject({ kind: "BLOCKED", reason: 'marker "Add to cart" missing from the body' });
  });

  it("selector-like markers check the markup, not the text", () => {
    // The words appear as text, but no element carries them.
    const body = "<p>main price title</p>";
    for (const marker of ["#main", ".price", "css:span", "css:p.title"]) {
      expect(classify(res({ body }), { markers: [marker] }).kind, marker).toBe("BLOCKED");
    }
    expect(classify(res({ body }), { markers: ["css:p", "main price"] }).kind).toBe("SUCCESS");
  });

  it("a class marker needs a whole class token; a tag marker a whole tag name", () => {
    const body = `<table class="price-list"><tr><td>1</td></tr></table>`;
    expect(classify(res({ body }), { markers: [".price"] }).kind).toBe("BLOCKED");
    expect(classify(res({ body }), { markers: [".price-list"] }).kind).toBe("SUCCESS");
    expect(classify(res({ body }), { markers: ["css:tab"] }).kind).toBe("BLOCKED");
    expect(classify(res({ body }), { markers: ["css:TABLE.price-list"] }).kind).toBe("SUCCESS");
  });

  it("markers from the rules apply when the call gives none; the call's replace them", () => {
    const rules = mergeRules(DEFAULT_RULES, { markers: [".price"] });
    expect(classify(res({ body: "<p>sold out</p>" }), {}, { rules }).kind).toBe("BLOCKED");
    expect(classify(res({ body: "<p>sold out</p>" }), { markers: ["sold out"] }, { rules }).kind).toBe("SUCCESS");
  });

  it("placeholderKind chooses what a missing marker is reported as", () => {
    const rules = mergeRules(DEFAULT_RULES, { placeholderKind: "TARGET_ERROR" });
    expect(classify(res(), { markers: ["#nope"] }, { rules }).kind).toBe("TARGET_ERROR");
  });

  it("without a body (HEAD), markers cannot be checked and do not fail the page", () => {
    const { body: _omit, ...head } = res();
    expect(classify({ ...head, bodyBytes: 0 }, { markers: ["#main"] }).kind).toBe("SUCCESS");
  });

  it("a malformed css: marker is a caller error", () => {
    expect(() => classify(res(), { markers: ["css:div > p"] })).toThrow(RangeError);
  });
});

describe("body size", () => {
  it("a 200 below minBytes (call or rules) is BLOCKED", () => {
    const c = classify(res({ body: "x".repeat(99) }), { minBytes: 100 });
    expect(c).toMatchObject({ kind: "BLOCKED", reason: "body of 99 B is below minBytes 100 B" });
    expect(classify(res({ body: "x".repeat(100) }), { minBytes: 100 }).kind).toBe("SUCCESS");
    const rules = mergeRules(DEFAULT_RULES, { minBytes: 1000 });
    expect(classify(res(), {}, { rules }).kind).toBe("BLOCKED");
  });

  it("bodyBytes counts over the (possibly truncated) body text", () => {
    expect(classify(res({ body: "x".repeat(10), bodyBytes: 5000 }), { minBytes: 1000 }).kind).toBe("SUCCESS");
    // UTF-8 bytes, not characters: 50 × "é" is 100 bytes.
    expect(classify(res({ body: "é".repeat(50) }), { minBytes: 100 }).kind).toBe("SUCCESS");
    expect(classify(res({ body: "é".repeat(49) }), { minBytes: 100 }).kind).toBe("BLOCKED");
  });

  it("a page far smaller than the median is BLOCKED once enough samples are known", () => {
    const small = res({ body: "x".repeat(2_000) });
    const sizes = { median: 10_000, samples: 10 };
    const c = classify(small, {}, { sizes });
    expect(c.kind).toBe("BLOCKED");
    expect(c.reason).toMatch(/far below the median 10000 B of 10 pages/);
    expect(classify(small, {}, { sizes: { median: 10_000, samples: 9 } }).kind).toBe("SUCCESS");
    expect(classify(res({ body: "x".repeat(2_500) }), {}, { sizes }).kind).toBe("SUCCESS");
  });
});
