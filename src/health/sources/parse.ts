/**
 * A source's answer → the proxies it lists (docs/spec.md §11). `lines`: one proxy a line
 * (host:port or a proxy URL), blank lines and `#` comments skipped. `json`: the array at a dotted
 * path (`data.proxies`; "" = the answer is the array) of strings, or — with `[]` after a step,
 * `proxies[].url` — of objects whose field (dotted) is the proxy. Any entry that is not a proxy
 * makes the whole answer malformed; an entry listed twice counts once.
 */
import { InvalidInputError, parseProxySpec } from "@proxybroker/sdk/model";
import type { ProxySpecInput, SourceFormat } from "@proxybroker/sdk/model";
import { SourceFormatError } from "./errors.js";

/** Most proxies one source may list. */
export const MAX_SOURCE_PROXIES = 100_000;

export interface ParseOptions {
  readonly format: SourceFormat;
  readonly jsonPath: string;
  /** Tier and labels of every proxy listed. */
  readonly tier: string;
  readonly labels: Readonly<Record<string, string>>;
}

export function parseSourceList(body: string, opts: ParseOptions): ProxySpecInput[] {
  const entries = opts.format === "json" ? jsonEntries(body, opts.jsonPath) : lineEntries(body);
  if (entries.length > MAX_SOURCE_PROXIES) throw new SourceFormatError(`lists ${entries.length} proxies, more than ${MAX_SOURCE_PROXIES}`);
  const out = new Map<string, ProxySpecInput>();
  for (const { where, text } of entries) {
    const spec = proxyOf(text, where, opts);
    if (!out.has(spec.id)) out.set(spec.id, spec);
  }
  return [...out.values()];
}

interface Entry {
  readonly where: string;
  readonly text: string;
}

function lineEntries(body: string): Entry[] {
  const out: Entry[] = [];
  body.split(/\r?\n/).forEach((raw, i) => {
    const text = raw.trim();
    if (text !== "" && !text.startsWith("#")) out.push({ where: `line ${i + 1}`, text });
  });
  return out;
}

function jsonEntries(body: string, path: string): Entry[] {
  let root: unknown;
  try {
    root = JSON.parse(body);
  } catch {
    throw new SourceFormatError("the answer is not JSON");
  }
  const star = path.indexOf("[]");
  const arrayPath = star < 0 ? path : path.slice(0, star);
  const fieldPath = star < 0 ? "" : path.slice(star + 2).replace(/^\./, "");
  const list = at(root, arrayPath);
  if (!Array.isArray(list)) throw new SourceFormatError(`${arrayPath === "" ? "the answer" : `"${arrayPath}"`} is not an array`);
  return list.map((item: unknown, i) => {
    const where = `${arrayPath === "" ? "" : arrayPath}[${i}]${fieldPath === "" ? "" : `.${fieldPath}`}`;
    const value = fieldPath === "" ? item : at(item, fieldPath);
    if (typeof value !== "string") throw new SourceFormatError(`${where} is not a string`);
    return { where, text: value.trim() };
  });
}

/** The value at a dotted path ("" = the value itself); undefined when a step is missing. */
function at(value: unknown, path: string): unknown {
  let v = value;
  for (const step of path === "" ? [] : path.split(".")) {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[step];
  }
  return v;
}

function proxyOf(text: string, where: string, opts: ParseOptions): ProxySpecInput {
  try {
    return parseProxySpec({ url: text, tier: opts.tier, labels: opts.labels });
  } catch (err) {
    if (!(err instanceof InvalidInputError)) throw err;
    // the entry may carry a password: the reason never repeats it
    throw new SourceFormatError(`${where}: ${err.message.split(text).join("the entry")}`);
  }
}
