import { describe, expect, it } from "vitest";
import { Classifier } from "../../../sdk/src/classify/index.js";
import type { ResponseFacts } from "../../../sdk/src/classify/index.js";
import type { DomainPolicySpec, PolicyExpectations } from "../../../sdk/src/model/index.js";
import { policySpec } from "../../../sdk/src/model/policy.js";

const SHOP: PolicyExpectations = {
  blockMarkers: ["Access denied"],
  requiredMarkers: ["#product"],
  minBytes: 100,
  slowDownPatterns: ["please wait a moment"],
};

const GOOD = `<html><body><div id="product">${"x".repeat(200)}</div></body></html>`;

function page(host: string, body: string, status = 200, bodyBytes?: number): ResponseFacts {
  return {
    status,
    url: `http://${host}/p`,
    headers: { "content-type": "text/html" },
    body,
    ...(bodyBytes === undefined ? {} : { bodyBytes }),
  };
}

/** The classifier applies the response expectations of the broker's policy for a host (docs/spec.md §10). */
describe("Classifier with the broker's policies", () => {
  let policies: readonly DomainPolicySpec[] = [
    policySpec({ pattern: "*.shop.example", expectations: SHOP }),
    policySpec({ pattern: "plain.shop.example" }),
  ];
  const classifier = new Classifier({ policies: () => policies });

  it("a block marker, a missing required marker, a body under the minimum: BLOCKED; a good page: SUCCESS", () => {
    expect(classifier.classify(page("a.shop.example", GOOD)).kind).toBe("SUCCESS");
    expect(classifier.classify(page("a.shop.example", `${GOOD}<p>Access Denied</p>`))).toMatchObject({
      kind: "BLOCKED",
      reason: expect.stringMatching(/access denied/),
    });
    expect(classifier.classify(page("a.shop.example", GOOD.replace("product", "other")))).toMatchObject({
      kind: "BLOCKED",
      reason: expect.stringMatching(/#product/),
    });
    expect(classifier.classify(page("a.shop.example", '<div id="product"></div>'))).toMatchObject({
      kind: "BLOCKED",
      reason: expect.stringMatching(/below minBytes 100/),
    });
  });

  it("a 403 with a slow-down pattern: RATE_LIMITED; the defaults still apply beside the policy's texts", () => {
    expect(classifier.classify(page("a.shop.example", "Please wait a moment", 403)).kind).toBe("RATE_LIMITED");
    expect(classifier.classify(page("a.shop.example", "Too many requests", 403)).kind).toBe("RATE_LIMITED");
    expect(classifier.classify(page("a.shop.example", `${GOOD} are you a robot?`)).kind).toBe("BLOCKED");
  });

  it("the call's own markers and minimum replace the policy's", () => {
    const other = `<div class="listing">${"y".repeat(50)}</div>`;
    expect(classifier.classify(page("a.shop.example", other), { markers: [".listing"], minBytes: 10 }).kind).toBe("SUCCESS");
  });

  it("a host whose policy expects nothing, or with no policy, gets the defaults", () => {
    expect(classifier.classify(page("plain.shop.example", "tiny")).kind).toBe("SUCCESS");
    expect(classifier.classify(page("elsewhere.example", "tiny")).kind).toBe("SUCCESS");
  });

  it("a worker's own perDomain rules win over the policy's", () => {
    const own = new Classifier({ policies: () => policies, perDomain: { "*.shop.example": { markers: [] } } });
    expect(own.classify(page("a.shop.example", "tiny")).kind).toBe("SUCCESS");
  });

  it("a marker not found in a truncated body is not judged missing", () => {
    const head = GOOD.replace("product", "other").slice(0, 150);
    expect(classifier.classify(page("a.shop.example", head, 200, 1_000_000)).kind).toBe("SUCCESS");
    expect(classifier.classify(page("a.shop.example", head, 200, Buffer.byteLength(head))).kind).toBe("BLOCKED");
  });

  it("follows the policies as they change", () => {
    expect(classifier.classify(page("b.shop.example", "tiny")).kind).toBe("BLOCKED");
    policies = [policySpec({ pattern: "*.shop.example" })];
    expect(classifier.classify(page("b.shop.example", "tiny")).kind).toBe("SUCCESS");
  });
});
