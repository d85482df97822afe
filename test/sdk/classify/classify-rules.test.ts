import { describe, expect, it } from "vitest";
import { InvalidInputError } from "@proxybroker/sdk/model";
import { Classifier, DEFAULT_RULES, RuleBook, mergeRules, parseMarker } from "../../../sdk/src/classify/index.js";
import type { ResponseFacts } from "../../../sdk/src/classify/index.js";

/** Per-domain configurability: which rules apply to which host, and how they merge. */

describe("RuleBook.rulesFor", () => {
  const book = new RuleBook({
    defaults: { minBytes: 100 },
    perDomain: {
      "*": { minSamples: 20 },
      "*.example.com": { minBytes: 500, markers: [".price"] },
      "*.eu.example.com": { minBytes: 700 },
      "Shop.Example.com": { minBytes: 900 },
    },
  });

  it("picks the exact host, else the longest *.suffix, else *", () => {
    expect(book.rulesFor("shop.example.com").minBytes).toBe(900);
    expect(book.rulesFor("a.eu.example.com").minBytes).toBe(700);
    expect(book.rulesFor("www.example.com").minBytes).toBe(500);
    expect(book.rulesFor("other.org").minBytes).toBe(100);
  });

  it("*.example.com matches subdomains only, not example.com itself", () => {
    expect(book.rulesFor("example.com").minBytes).toBe(100);
  });

  it("normalises the host: case, port, trailing dot", () => {
    expect(book.rulesFor("SHOP.example.com.:8443").minBytes).toBe(900);
  });

  it("merges the defaults with the most specific entry only", () => {
    const shop = book.rulesFor("shop.example.com");
    expect(shop.minSamples).toBe(10); // from DEFAULT_RULES, not from "*"
    expect(shop.markers).toEqual([]); // not from "*.example.com"
    expect(book.rulesFor("other.org").minSamples).toBe(20);
    expect(book.rulesFor("www.example.com").markers).toEqual([".price"]);
    expect(book.rulesFor("www.example.com").captchaUrlPatterns).toEqual(DEFAULT_RULES.captchaUrlPatterns);
  });

  it("lists replace, status and error maps merge key by key", () => {
    const b = new RuleBook({
      defaults: { statusKinds: { 502: "PROXY_ERROR" }, errorKinds: { EPIPE: "TARGET_ERROR" } },
      perDomain: {
        "a.com": {
          statusKinds: { 503: "RATE_LIMITED" },
          errorKinds: { EAI_AGAIN: "PROXY_ERROR" },
          captchaBodyPatterns: ["checking your browser"],
        },
      },
    });
    const a = b.rulesFor("a.com");
    expect(a.statusKinds).toEqual({ 502: "PROXY_ERROR", 503: "RATE_LIMITED" });
    expect(a.errorKinds).toEqual({ EPIPE: "TARGET_ERROR", EAI_AGAIN: "PROXY_ERROR" });
    expect(a.captchaBodyPatterns).toEqual(["checking your browser"]);
  });

  it("an override key given as undefined keeps the default", () => {
    expect(mergeRules(DEFAULT_RULES, { minSizeRatio: undefined }).minSizeRatio).toBe(0.25);
  });

  it("rejects bad patterns and values when built", () => {
    expect(() => new RuleBook({ perDomain: { "shop.*.com": {} } })).toThrow(InvalidInputError);
    expect(() => new RuleBook({ perDomain: { "a.com": {}, "A.com": {} } })).toThrow(/twice/);
    expect(() => new RuleBook({ defaults: { minSizeRatio: 1.5 } })).toThrow(RangeError);
    expect(() => new RuleBook({ defaults: { minSamples: 0 } })).toThrow(RangeError);
    expect(() => new RuleBook({ defaults: { statusKinds: { 999: "BLOCKED" } } })).toThrow(RangeError);
    expect(() => new RuleBook({ defaults: { statusKinds: { 503: "SLOW" as never } } })).toThrow(/not an outcome kind/);
    expect(() => new RuleBook({ defaults: { captchaUrlPatterns: [""] } })).toThrow(RangeError);
  });

  it("global RegExps are made safe for repeated tests", () => {
    const rules = mergeRules(DEFAULT_RULES, { captchaBodyPatterns: [/blocked/g] });
    const c = new Classifier({ defaults: rules });
    const r: ResponseFacts = { status: 200, url: "https://a.com/", headers: {}, body: "you are blocked" };
    expect(c.classify(r).kind).toBe("BLOCKED");
    expect(c.classify(r).kind).toBe("BLOCKED"); // a shared lastIndex would make this one miss
  });
});

describe("per-domain rules in a Classifier", () => {
  const classifier = new Classifier({
    perDomain: {
      "shop.example.com": { statusKinds: { 503: "RATE_LIMITED" }, markers: ["#product"], slowDownBodyPatterns: [/come back later/i] },
      "*.news.example": { loginUrlPatterns: [], captchaBodyPatterns: [] },
    },
  });
  const r = (over: Partial<ResponseFacts>): ResponseFacts => ({
    status: 200,
    url: "https://shop.example.com/p/1",
    headers: {},
    body: "",
    ...over,
  });

  it("a rule for one domain leaves other domains on the defaults", () => {
    expect(classifier.classify(r({ status: 503 })).kind).toBe("RATE_LIMITED");
    expect(classifier.classify(r({ status: 503, url: "https://other.example.com/" })).kind).toBe("TARGET_ERROR");
    expect(classifier.classify(r({ status: 403, body: "come back later" })).kind).toBe("RATE_LIMITED");
    expect(classifier.classify(r({ status: 403, body: "come back later", url: "https://other.example.com/" })).kind).toBe("BLOCKED");
  });

  it("domain markers apply to that domain only", () => {
    expect(classifier.classify(r({ body: "<div>none</div>" })).kind).toBe("BLOCKED");
    expect(classifier.classify(r({ body: `<div id="product">x</div>` })).kind).toBe("SUCCESS");
    expect(classifier.classify(r({ body: "<div>none</div>", url: "https://other.example.com/" })).kind).toBe("SUCCESS");
  });

  it("a domain can switch off the login and captcha-body rules", () => {
    const login = "https://www.news.example/login";
    expect(classifier.classify(r({ url: login })).kind).toBe("SUCCESS");
    expect(classifier.classify(r({ url: "https://www.news.example/a", body: "are you a robot?" })).kind).toBe("SUCCESS");
    expect(classifier.classify(r({ url: "https://other.example/login" })).kind).toBe("BLOCKED");
  });

  it("the requested host selects the rules when requestUrl is given", () => {
    const c = classifier.classify(r({ status: 503, url: "https://cdn.elsewhere.net/x", requestUrl: "https://shop.example.com/p/1" }));
    expect(c.kind).toBe("RATE_LIMITED");
  });
});

describe("parseMarker", () => {
  it("tells text from selectors", () => {
    expect(parseMarker("Add to cart")).toEqual({ kind: "text", text: "add to cart" });
    expect(parseMarker("price")).toEqual({ kind: "text", text: "price" });
    expect(parseMarker("example.com")).toEqual({ kind: "text", text: "example.com" });
    expect(parseMarker("#main")).toEqual({ kind: "selector", id: "main", classes: [] });
    expect(parseMarker(".a.b")).toEqual({ kind: "selector", classes: ["a", "b"] });
    expect(parseMarker("css:DIV#main.card")).toEqual({ kind: "selector", tag: "div", id: "main", classes: ["card"] });
    expect(parseMarker("text:#1")).toEqual({ kind: "text", text: "#1" });
  });

  it("rejects empty and malformed markers", () => {
    for (const bad of ["", "  ", "text:", "css:", "css:div p", "css:#a#b"]) expect(() => parseMarker(bad), bad).toThrow(RangeError);
  });
});
