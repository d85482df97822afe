import { describe, expect, it } from "vitest";
import { InvalidInputError, MAX_TEMPLATE_PROXIES, expandTemplate, parseProxySpec, sessionName } from "@proxybroker/sdk/model";
import type { ProxyTemplateInput } from "@proxybroker/sdk/model";

const URL = "http://cust-{session}-country-{country}:PW@gw.example:7777";
const template = (over: Partial<ProxyTemplateInput> = {}): ProxyTemplateInput => ({
  url: URL,
  sessions: 2,
  labels: [{ key: "country", values: ["us", "de"] }],
  tier: "residential",
  ...over,
});

describe("proxy templates (§11)", () => {
  it("makes N sessions per label value, labelled with the value", () => {
    expect(expandTemplate(template())).toEqual([
      { url: "http://cust-sus00001-country-us:PW@gw.example:7777", tier: "residential", labels: { country: "us" } },
      { url: "http://cust-sus00002-country-us:PW@gw.example:7777", tier: "residential", labels: { country: "us" } },
      { url: "http://cust-sde00001-country-de:PW@gw.example:7777", tier: "residential", labels: { country: "de" } },
      { url: "http://cust-sde00002-country-de:PW@gw.example:7777", tier: "residential", labels: { country: "de" } },
    ]);
  });

  it("crosses several labels; the same template gives the same names, more sessions keep the first", () => {
    const two = template({
      url: "http://c-{session}-cc-{country}-city-{city}:PW@gw.example:7777",
      labels: [
        { key: "country", values: ["us", "de"] },
        { key: "city", values: ["a", "b", "c"] },
      ],
    });
    const made = expandTemplate(two);
    expect(made).toHaveLength(12);
    expect(made[2]).toMatchObject({ url: "http://c-susb00001-cc-us-city-b:PW@gw.example:7777", labels: { country: "us", city: "b" } });
    expect(expandTemplate(two)).toEqual(made);
    const more = expandTemplate({ ...two, sessions: 3 }).map((p) => p.url);
    for (const p of made) expect(more).toContain(p.url);
    // every one a proxy of its own
    expect(new Set(made.map((p) => parseProxySpec(p).id)).size).toBe(12);
  });

  it("makes session names of letters and digits only", () => {
    expect(sessionName(["US-East", "x_1"], 7)).toBe("suseastx100007");
    expect(sessionName([], 12)).toBe("s00012");
    expect(expandTemplate(template({ labels: [], url: "http://u-{session}:PW@gw.example:1", sessions: 0 }))).toEqual([
      { url: "http://u-s00001:PW@gw.example:1", tier: "residential", labels: {} },
    ]);
  });

  it("percent-encodes values, so a value cannot change the URL's structure", () => {
    const [p] = expandTemplate(template({ sessions: 1, labels: [{ key: "country", values: ["a:b@c"] }] }));
    expect(p?.url).toBe("http://cust-sabc00001-country-a%3Ab%40c:PW@gw.example:7777");
    expect(parseProxySpec(p!).id).toBe("cust-sabc00001-country-a%3Ab%40c@gw.example:7777");
  });

  it("says what is wrong", () => {
    const bad: [Partial<ProxyTemplateInput>, RegExp][] = [
      [{ url: "http://u-{sesion}:PW@gw:1" }, /unknown placeholder at character 10:/],
      [{ url: "http://u-{country}:PW@gw:1" }, /needs \{session\}/],
      [{ url: "http://u-{session}:PW@gw:1" }, /needs \{country\}/],
      [{ url: "http://u-{session-{country}:PW@gw:1" }, /unknown placeholder|unmatched/],
      [{ url: "http://u-{session}}-{country}:PW@gw:1" }, /unmatched/],
      [{ url: " " }, /url is empty/],
      [{ labels: [{ key: "country", values: [] }] }, /no values/],
      [{ labels: [{ key: "session", values: ["a"] }] }, /would hide the \{session\} placeholder/],
      [{ labels: [{ key: "country", values: ["us", "us"] }] }, /repeats a value/],
      [{ sessions: MAX_TEMPLATE_PROXIES }, /makes 20000 proxies; at most 10000/],
    ];
    for (const [over, message] of bad) expect(() => expandTemplate(template(over)), String(over.url)).toThrow(message);
    expect(() => expandTemplate(template({ sessions: 1.5 }))).toThrow(InvalidInputError);
  });
});
