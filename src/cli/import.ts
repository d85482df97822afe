/** `proxybroker import <file>` and `proxybroker import --template URL` (docs/spec.md §11). */
import { readFile } from "node:fs/promises";
import { SingleBar } from "cli-progress";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AddProxiesResponse, ProxyTemplateSchema } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { redactProxyLine, redactSecrets } from "../security/redact.js";
import { parseProxyLine } from "../config/proxies-file.js";
import { connect, type ConnectionOptions } from "./connection.js";
import { cliIO } from "./io.js";
import { CliExit, EXIT, fromRpc } from "./exit.js";
import { print, printJson } from "./format.js";

const BATCH = 1_000;

/** Options of `import`. */
export interface ImportOptions extends ConnectionOptions {
  readonly tier?: string;
  readonly template?: string;
  readonly sessions?: string;
  /** `key=value1,value2`, once per label. */
  readonly label?: readonly string[];
}

/** One rejected entry as shown: where it was (a file line, or the template's n-th proxy), the url redacted. */
interface Rejected {
  readonly line: number;
  readonly entry: string;
  readonly reason: string;
}

/** `--label` collects its values: one `key=v1,v2` per use. */
export function collectLabel(value: string, previous: readonly string[] = []): string[] {
  return [...previous, value];
}

/** The template of the options, or a usage error saying what is wrong. */
export function templateOf(o: ImportOptions): MessageInitShape<typeof ProxyTemplateSchema> {
  const url = o.template ?? "";
  const sessions = o.sessions === undefined ? 1 : Number(o.sessions);
  if (!Number.isInteger(sessions) || sessions < 1) throw new CliExit(EXIT.usage, `--sessions ${o.sessions} is not a whole number from 1`);
  const labels = (o.label ?? []).map((kv) => {
    const eq = kv.indexOf("=");
    if (eq <= 0 || eq === kv.length - 1) throw new CliExit(EXIT.usage, `--label ${kv} is not key=value[,value…]`);
    return { key: kv.slice(0, eq), values: kv.slice(eq + 1).split(",") };
  });
  return { url, sessions, tier: o.tier ?? "", labels };
}

function report(o: ImportOptions, added: number, updated: number, rejected: Rejected[], where: (r: Rejected) => string): void {
  rejected.sort((a, b) => a.line - b.line);
  if (o.json === true) printJson({ pool: o.pool, added, updated, rejected });
  else {
    print(`pool ${o.pool}: ${added} added, ${updated} updated, ${rejected.length} rejected`);
    for (const r of rejected) print(`  ${where(r)}: ${r.entry}: ${r.reason}`);
  }
  if (rejected.length > 0) throw new CliExit(EXIT.partial, "");
}

/** The rejected entries of one answer; `lineOf` maps a request index to what is shown. */
function rejectedOf(r: AddProxiesResponse, lineOf: (index: number) => number): Rejected[] {
  // the broker redacts them already; redacted again so that an older broker cannot leak one
  return r.rejected.map((rej) => ({ line: lineOf(rej.index), entry: redactSecrets(rej.url), reason: redactSecrets(rej.reason) }));
}

/** Add the proxies a template makes (expanded by the broker), in one call. */
export async function importTemplate(o: ImportOptions): Promise<void> {
  const template = templateOf(o);
  const c = connect(o);
  let r: AddProxiesResponse;
  try {
    r = await c.admin.addProxies({ pool: o.pool, template }, c.callOptions(120_000));
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
  report(
    o,
    r.added.length,
    r.updated.length,
    rejectedOf(r, (i) => i + 1),
    (x) => `template proxy ${x.line}`,
  );
}

/** Add the proxies of a file, 1,000 per call, with progress. */
export async function importFile(file: string, o: ImportOptions): Promise<void> {
  const text = await readFile(file, "utf8").catch((err: unknown) => {
    throw new CliExit(EXIT.usage, `cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
  });
  const specs: { url: string; tier: string; labels: Record<string, string>; line: number }[] = [];
  const rejected: Rejected[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    try {
      const p = parseProxyLine(line);
      specs.push({ url: p.url, tier: p.tier === "" ? (o.tier ?? "") : p.tier, labels: p.labels, line: i + 1 });
    } catch (err) {
      // a rejected line is shown without its password, never past where one could start
      rejected.push({
        line: i + 1,
        entry: redactProxyLine(line),
        reason: redactSecrets(err instanceof Error ? err.message : String(err)),
      });
    }
  });
  const c = connect(o);
  const bar =
    o.json === true
      ? undefined
      : new SingleBar({
          format: "importing [{bar}] {value}/{total} proxies",
          stream: cliIO().err,
          noTTYOutput: true,
          notTTYSchedule: 1_000,
        });
  bar?.start(specs.length, 0);
  let added = 0;
  let updated = 0;
  try {
    for (let i = 0; i < specs.length; i += BATCH) {
      const chunk = specs.slice(i, i + BATCH);
      const r = await c.admin.addProxies(
        { pool: o.pool, proxies: chunk.map(({ url, tier, labels }) => ({ url, tier, labels })) },
        c.callOptions(60_000),
      );
      added += r.added.length;
      updated += r.updated.length;
      // RejectedProxy.index is the entry's place in this call's chunk
      rejected.push(...rejectedOf(r, (index) => chunk[index]?.line ?? 0));
      bar?.update(Math.min(specs.length, i + chunk.length));
    }
  } catch (err) {
    throw fromRpc(err);
  } finally {
    bar?.stop();
    c.close();
  }
  report(o, added, updated, rejected, (x) => `line ${x.line}`);
}

/** `import [file]`: a file, or `--template`, not both. */
export function runImport(file: string | undefined, o: ImportOptions): Promise<void> {
  if (o.template !== undefined) {
    if (file !== undefined) throw new CliExit(EXIT.usage, "give a file or --template, not both");
    return importTemplate(o);
  }
  if (o.sessions !== undefined || (o.label ?? []).length > 0) throw new CliExit(EXIT.usage, "--sessions and --label go with --template");
  if (file === undefined) throw new CliExit(EXIT.usage, "give a file of proxies, or --template URL");
  return importFile(file, o);
}
