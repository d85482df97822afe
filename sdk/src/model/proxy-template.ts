import { InvalidInputError } from "./domain-key.js";

/**
 * Proxy templates (docs/spec.md §11 Templates): a provider's gateway URL with placeholders,
 * expanded to one proxy per session per combination of label values. Pure: the admin service
 * expands a template, then adds what it made through the ordinary add path.
 */

/** A template as the admin call takes it (`ProxyTemplate`). */
export interface ProxyTemplateInput {
  readonly url: string;
  /** Sessions per combination of label values; 0 means 1. */
  readonly sessions: number;
  readonly labels: readonly { readonly key: string; readonly values: readonly string[] }[];
  readonly tier: string;
}

/** One proxy a template made (a `ProxySpec`, to be validated by parseProxySpec). */
export interface TemplateProxy {
  readonly url: string;
  readonly tier: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** Most proxies one template may make. */
export const MAX_TEMPLATE_PROXIES = 10_000;
const SESSION = "session";
const PLACEHOLDER = /\{([^{}]*)\}/g;

/**
 * The session name of the `i`-th session (1-based) of a combination of label values: `s`, the
 * values' letters and digits (lowercase), then `i` in five digits — e.g. `sus00001`. Letters and
 * digits only, because providers' username grammars separate their parameters with `-` or `_`;
 * the same template gives the same names every time, and more sessions keep the first names.
 */
export function sessionName(values: readonly string[], i: number): string {
  const tag = values
    .join("")
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "");
  return `s${tag}${String(i).padStart(5, "0")}`;
}

function check(t: ProxyTemplateInput): { sessions: number; total: number } {
  if (t.url.trim() === "") throw new InvalidInputError("template url is empty");
  if (!Number.isInteger(t.sessions) || t.sessions < 0) throw new InvalidInputError("template sessions must be a whole number");
  const sessions = t.sessions === 0 ? 1 : t.sessions;
  const keys = new Set<string>();
  for (const l of t.labels) {
    if (l.key === SESSION) throw new InvalidInputError(`template label "${SESSION}" would hide the {${SESSION}} placeholder`);
    if (keys.has(l.key)) throw new InvalidInputError(`template label "${l.key}" is given twice`);
    keys.add(l.key);
    if (l.values.length === 0) throw new InvalidInputError(`template label "${l.key}" has no values`);
    if (new Set(l.values).size !== l.values.length) throw new InvalidInputError(`template label "${l.key}" repeats a value`);
  }
  const used = new Set<string>();
  for (const m of t.url.matchAll(PLACEHOLDER)) {
    const name = m[1] ?? "";
    if (name !== SESSION && !keys.has(name)) {
      // by its place, not its name: braces in a password are a placeholder too, and its text is the password's
      throw new InvalidInputError(`template url has an unknown placeholder at character ${m.index + 1}: use {session} or a label key`);
    }
    used.add(name);
  }
  if (/[{}]/.test(t.url.replace(PLACEHOLDER, ""))) throw new InvalidInputError("template url has an unmatched { or }");
  if (sessions > 1 && !used.has(SESSION)) {
    throw new InvalidInputError("template url needs {session} for more than one session: else every session is the same proxy");
  }
  for (const l of t.labels) {
    if (l.values.length > 1 && !used.has(l.key)) {
      throw new InvalidInputError(`template url needs {${l.key}}: label "${l.key}" has several values, the url none`);
    }
  }
  const total = t.labels.reduce((n, l) => n * l.values.length, sessions);
  if (total > MAX_TEMPLATE_PROXIES) {
    throw new InvalidInputError(`template makes ${total} proxies; at most ${MAX_TEMPLATE_PROXIES}`);
  }
  return { sessions, total };
}

/** Every combination of the labels' values, the first label outermost. */
function combinations(labels: ProxyTemplateInput["labels"]): string[][] {
  let out: string[][] = [[]];
  for (const l of labels) out = out.flatMap((prefix) => l.values.map((v) => [...prefix, v]));
  return out;
}

/**
 * The proxies of `t`, in order: per combination of label values (the first label outermost),
 * sessions 1…N. Placeholders are replaced by the session name and the label values
 * (percent-encoded, so a value cannot change the URL's structure). Throws `InvalidInputError`.
 */
export function expandTemplate(t: ProxyTemplateInput): TemplateProxy[] {
  const { sessions } = check(t);
  const out: TemplateProxy[] = [];
  for (const values of combinations(t.labels)) {
    const labels: Record<string, string> = {};
    t.labels.forEach((l, i) => {
      labels[l.key] = values[i] ?? "";
    });
    for (let i = 1; i <= sessions; i++) {
      const session = sessionName(values, i);
      const url = t.url.replace(PLACEHOLDER, (_, name: string) => encodeURIComponent(name === SESSION ? session : (labels[name] ?? "")));
      out.push({ url, tier: t.tier, labels });
    }
  }
  const urls = new Set(out.map((p) => p.url));
  if (urls.size !== out.length) throw new InvalidInputError("template makes one url twice");
  return out;
}
