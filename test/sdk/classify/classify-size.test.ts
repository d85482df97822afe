import { describe, expect, it } from "vitest";
import { Classifier, RunningMedian } from "../../../sdk/src/classify/index.js";
import type { ResponseFacts } from "../../../sdk/src/classify/index.js";
import { SizeBook } from "../../../sdk/src/classify/size-book.js";
import { seededRandom } from "../../support/fake-clock.js";

/** The bounded running median and the "far smaller than usual" rule. */

describe("RunningMedian", () => {
  it("is the middle value (odd) or the mean of the two middle values (even)", () => {
    const m = new RunningMedian(101);
    expect(m.median()).toBeUndefined();
    for (const v of [5, 1, 9]) m.add(v);
    expect(m.median()).toBe(5);
    m.add(3);
    expect(m.median()).toBe(4);
    expect(m.count).toBe(4);
  });

  it("keeps only the last `window` values", () => {
    const m = new RunningMedian(3);
    for (const v of [100, 100, 100, 1, 2, 3]) m.add(v);
    expect(m.count).toBe(3);
    expect(m.median()).toBe(2);
  });

  it("matches a brute-force median over a sliding window", () => {
    const rnd = seededRandom(7);
    const m = new RunningMedian(11);
    const all: number[] = [];
    for (let i = 0; i < 500; i++) {
      const v = Math.floor(rnd() * 50); // many duplicates
      m.add(v);
      all.push(v);
      const w = all.slice(-11).sort((a, b) => a - b);
      const mid = w.length >>> 1;
      const expected = w.length % 2 === 1 ? w[mid] : (w[mid - 1]! + w[mid]!) / 2;
      expect(m.median(), `step ${i}`).toBe(expected);
    }
  });

  it("rejects a bad window or value", () => {
    expect(() => new RunningMedian(0)).toThrow(RangeError);
    expect(() => new RunningMedian(2.5)).toThrow(RangeError);
    expect(() => new RunningMedian(3).add(-1)).toThrow(RangeError);
    expect(() => new RunningMedian(3).add(Number.NaN)).toThrow(RangeError);
  });
});

describe("SizeBook", () => {
  it("drops the least recently used host beyond maxKeys", () => {
    const book = new SizeBook(2);
    book.record("a.com", undefined, 1, 5);
    book.record("b.com", undefined, 2, 5);
    book.record("a.com", undefined, 3, 5); // a.com is now the most recent
    book.record("c.com", undefined, 4, 5);
    expect(book.size).toBe(2);
    expect(book.stats("b.com")).toBeUndefined();
    expect(book.stats("a.com")).toEqual({ median: 2, samples: 2 });
  });

  it("reset(host) forgets every page kind of that host only", () => {
    const book = new SizeBook();
    book.record("a.com", undefined, 1, 5);
    book.record("a.com", "product", 1, 5);
    book.record("a.com.evil.net", undefined, 1, 5);
    book.reset("a.com");
    expect(book.size).toBe(1);
    expect(book.stats("a.com.evil.net")).toBeDefined();
  });
});

describe("far smaller than the running median", () => {
  const page = (bytes: number, url = "https://shop.example.com/p"): ResponseFacts => ({
    status: 200,
    url,
    headers: {},
    bodyBytes: bytes,
    body: "<html>…</html>",
  });

  it("warms up over minSamples successful pages, then flags a page far smaller", () => {
    const c = new Classifier();
    // While warming up (9 samples < 10), even a tiny page passes — and feeds the median.
    for (let i = 0; i < 9; i++) expect(c.classify(page(40_000 + i)).kind).toBe("SUCCESS");
    expect(c.sizeStats("shop.example.com")?.samples).toBe(9);
    expect(c.classify(page(5_000)).kind).toBe("SUCCESS"); // 10th sample
    expect(c.sizeStats("shop.example.com")?.samples).toBe(10);
    const small = c.classify(page(5_000));
    expect(small.kind).toBe("BLOCKED");
    expect(small.reason).toMatch(/far below the median/);
    // 25 % of the median is the line: just above passes.
    const median = c.sizeStats("shop.example.com")!.median;
    expect(c.classify(page(Math.ceil(median * 0.25))).kind).toBe("SUCCESS");
  });

  it("flagged pages do not feed the median, successful ones do", () => {
    const c = new Classifier();
    for (let i = 0; i < 10; i++) c.classify(page(40_000));
    for (let i = 0; i < 50; i++) expect(c.classify(page(1_000)).kind).toBe("BLOCKED");
    expect(c.sizeStats("shop.example.com")).toEqual({ median: 40_000, samples: 10 });
    // Nor do non-2xx responses, even those classified SUCCESS.
    c.classify({ ...page(10), status: 404 });
    expect(c.classify({ ...page(10), status: 302 }).kind).toBe("SUCCESS");
    expect(c.sizeStats("shop.example.com")?.samples).toBe(10);
  });

  it("keeps one median per host", () => {
    const c = new Classifier();
    for (let i = 0; i < 10; i++) c.classify(page(40_000));
    expect(c.classify(page(1_000, "https://other.example.org/")).kind).toBe("SUCCESS");
    expect(c.classify(page(1_000, "https://SHOP.example.com./x")).kind).toBe("BLOCKED");
  });

  it("files the size under the requested host, not a redirect's", () => {
    const c = new Classifier();
    for (let i = 0; i < 10; i++) c.classify({ ...page(40_000, "https://www.example.com/"), requestUrl: "https://example.com/" });
    expect(c.sizeStats("example.com")?.samples).toBe(10);
    expect(c.sizeStats("www.example.com")).toBeUndefined();
  });

  it("sizeKey keeps separate medians for different kinds of page", () => {
    const c = new Classifier();
    for (let i = 0; i < 10; i++) c.classify(page(40_000), { sizeKey: "product" });
    expect(c.classify(page(2_000), { sizeKey: "listing" }).kind).toBe("SUCCESS");
    expect(c.classify(page(2_000), { sizeKey: "product" }).kind).toBe("BLOCKED");
    expect(c.classify(page(2_000)).kind).toBe("SUCCESS");
  });

  it("minSizeRatio, minSamples and sizeWindow are configurable per domain", () => {
    const c = new Classifier({
      perDomain: {
        "shop.example.com": { minSizeRatio: 0.5, minSamples: 3, sizeWindow: 3 },
        "lax.example.com": { minSizeRatio: 0 },
      },
    });
    for (let i = 0; i < 3; i++) c.classify(page(10_000));
    expect(c.classify(page(4_900)).kind).toBe("BLOCKED"); // < 0.5 × 10 000 after only 3 samples
    expect(c.classify(page(5_000)).kind).toBe("SUCCESS");
    for (let i = 0; i < 3; i++) c.classify(page(5_000));
    expect(c.sizeStats("shop.example.com")).toEqual({ median: 5_000, samples: 3 }); // window of 3
    for (let i = 0; i < 10; i++) c.classify(page(10_000, "https://lax.example.com/"));
    expect(c.classify(page(10, "https://lax.example.com/")).kind).toBe("SUCCESS");
  });

  it("resetSizes starts the warm-up again", () => {
    const c = new Classifier();
    for (let i = 0; i < 10; i++) c.classify(page(40_000));
    c.resetSizes("shop.example.com");
    expect(c.classify(page(1_000)).kind).toBe("SUCCESS");
  });
});
