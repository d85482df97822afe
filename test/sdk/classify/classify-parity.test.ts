import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { DEFAULT_RULES, classify, rulesOfExpectations } from "../../../sdk/src/classify/index.js";
import type { PolicyExpectations } from "../../../sdk/src/model/index.js";
import type { Expectations, ResponseFacts } from "../../../sdk/src/classify/index.js";

/**
 * The shared table of classifier cases (test/fixtures/classify-cases.json). The Python client's
 * clients/python/tests/test_classify_parity.py runs the same table against its classifier, so the
 * two classify alike with their default rules, and with a domain policy's response expectations
 * laid over them (a case's `policy`).
 */

const KINDS = ["SUCCESS", "RATE_LIMITED", "BLOCKED", "PROXY_ERROR", "TARGET_ERROR"] as const;
type Kind = (typeof KINDS)[number];

interface ParityCase {
  readonly name: string;
  readonly response: ResponseFacts;
  readonly expectations: Expectations;
  /** The response expectations of the host's domain policy, laid over the default rules. */
  readonly policy?: PolicyExpectations;
  readonly now?: number;
  readonly expect: { readonly kind: Kind; readonly retryAfterMs?: number };
}

type Fields = Readonly<Record<string, unknown>>;

/** `value` as an object; with `allowed`, any other key is an error (a typo in the table). */
function fields(value: unknown, where: string, allowed?: readonly string[]): Fields {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError(`${where}: not an object`);
  const unknown = allowed === undefined ? [] : Object.keys(value).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) throw new TypeError(`${where}: unknown key(s) ${unknown.join(", ")}`);
  return value as Fields;
}

function text(value: unknown, where: string): string {
  if (typeof value !== "string") throw new TypeError(`${where}: not a string`);
  return value;
}

function count(value: unknown, where: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) throw new TypeError(`${where}: not a non-negative integer`);
  return value;
}

function kindOf(value: unknown, where: string): Kind {
  const found = KINDS.find((k) => k === value);
  if (found === undefined) throw new TypeError(`${where}: not an outcome kind: ${String(value)}`);
  return found;
}

function headersOf(value: unknown, where: string): Record<string, string> {
  if (value === undefined) return {};
  const raw = fields(value, where);
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(raw)) {
    if (name !== name.toLowerCase()) throw new TypeError(`${where}: header name "${name}" is not lowercase`);
    out[name] = text(v, `${where}.${name}`);
  }
  return out;
}

function parseCase(value: unknown, index: number): ParityCase {
  const c = fields(value, `case ${index}`, ["name", "response", "expectations", "policy", "now", "expect"]);
  const name = text(c["name"], `case ${index}.name`);
  const at = `case "${name}"`;
  const r = fields(c["response"], `${at}.response`, ["status", "url", "requestUrl", "headers", "body", "bodyBytes"]);
  const response: ResponseFacts = {
    status: count(r["status"], `${at}.response.status`),
    url: text(r["url"], `${at}.response.url`),
    headers: headersOf(r["headers"], `${at}.response.headers`),
    ...(r["requestUrl"] === undefined ? {} : { requestUrl: text(r["requestUrl"], `${at}.response.requestUrl`) }),
    ...(r["body"] === undefined ? {} : { body: text(r["body"], `${at}.response.body`) }),
    ...(r["bodyBytes"] === undefined ? {} : { bodyBytes: count(r["bodyBytes"], `${at}.response.bodyBytes`) }),
  };
  const e = c["expectations"] === undefined ? {} : fields(c["expectations"], `${at}.expectations`, ["markers", "minBytes"]);
  const markers = e["markers"];
  if (markers !== undefined && !Array.isArray(markers)) throw new TypeError(`${at}.expectations.markers: not an array`);
  const expectations: Expectations = {
    ...(markers === undefined ? {} : { markers: markers.map((m: unknown, i) => text(m, `${at}.expectations.markers[${i}]`)) }),
    ...(e["minBytes"] === undefined ? {} : { minBytes: count(e["minBytes"], `${at}.expectations.minBytes`) }),
  };
  const x = fields(c["expect"], `${at}.expect`, ["kind", "retryAfterMs"]);
  return {
    name,
    response,
    expectations,
    ...(c["policy"] === undefined ? {} : { policy: policyOf(c["policy"], `${at}.policy`) }),
    ...(c["now"] === undefined ? {} : { now: count(c["now"], `${at}.now`) }),
    expect: {
      kind: kindOf(x["kind"], `${at}.expect.kind`),
      ...(x["retryAfterMs"] === undefined ? {} : { retryAfterMs: count(x["retryAfterMs"], `${at}.expect.retryAfterMs`) }),
    },
  };
}

function texts(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new TypeError(`${where}: not an array`);
  return value.map((v: unknown, i) => text(v, `${where}[${i}]`));
}

function policyOf(value: unknown, where: string): PolicyExpectations {
  const p = fields(value, where, ["blockMarkers", "requiredMarkers", "minBytes", "slowDownPatterns"]);
  return {
    blockMarkers: texts(p["blockMarkers"], `${where}.blockMarkers`),
    requiredMarkers: texts(p["requiredMarkers"], `${where}.requiredMarkers`),
    minBytes: p["minBytes"] === undefined ? 0 : count(p["minBytes"], `${where}.minBytes`),
    slowDownPatterns: texts(p["slowDownPatterns"], `${where}.slowDownPatterns`),
  };
}

function loadCases(): ParityCase[] {
  const path = fileURLToPath(new URL("../../fixtures/classify-cases.json", import.meta.url));
  const raw: unknown = JSON.parse(readFileSync(path, "utf8"));
  if (!Array.isArray(raw)) throw new TypeError(`${path}: not an array`);
  const cases = raw.map((c: unknown, i) => parseCase(c, i));
  const names = new Set<string>();
  for (const c of cases) {
    if (names.has(c.name)) throw new TypeError(`${path}: case name "${c.name}" appears twice`);
    names.add(c.name);
  }
  return cases;
}

const CASES = loadCases();

describe("classifier parity table (test/fixtures/classify-cases.json)", () => {
  it("has enough cases to mean something", () => {
    expect(CASES.length).toBeGreaterThanOrEqual(30);
  });

  it.each(CASES.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    const now = c.now;
    const rules = c.policy === undefined ? DEFAULT_RULES : rulesOfExpectations(DEFAULT_RULES, c.policy);
    const got = classify(c.response, c.expectations, { rules, ...(now === undefined ? {} : { now: () => now }) });
    expect(got.kind, got.reason).toBe(c.expect.kind);
    expect(got.httpStatus).toBe(c.response.status);
    if (c.expect.retryAfterMs !== undefined) expect(got.retryAfterMs, got.reason).toBe(c.expect.retryAfterMs);
  });
});
