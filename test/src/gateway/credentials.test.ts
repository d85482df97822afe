import { describe, expect, it } from "vitest";
import { browserWithoutCredentials, WarnEvery } from "../../../src/gateway/credentials.js";

const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36";

describe("a browser that sent no proxy credentials", () => {
  it("is a browser's User-Agent without Proxy-Authorization; not curl, requests or Scrapy, nor a browser that sent credentials", () => {
    expect(browserWithoutCredentials({ "user-agent": CHROME })).toBe(true);
    expect(
      browserWithoutCredentials({ "user-agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0" }),
    ).toBe(true);
    expect(browserWithoutCredentials({ "user-agent": CHROME, "proxy-authorization": "Basic eDp4" })).toBe(false);
    expect(browserWithoutCredentials({ "user-agent": "curl/7.88.1" })).toBe(false);
    expect(browserWithoutCredentials({ "user-agent": "python-requests/2.28.1" })).toBe(false);
    expect(browserWithoutCredentials({ "user-agent": "Scrapy/2.8.0 (+https://scrapy.org)" })).toBe(false);
    expect(browserWithoutCredentials({})).toBe(false);
  });

  it("is said at most once a minute", () => {
    let now = 0;
    const w = new WarnEvery(60_000, () => now);
    expect(w.due()).toBe(true);
    now = 59_999;
    expect(w.due()).toBe(false);
    now = 60_000;
    expect(w.due()).toBe(true);
  });
});
