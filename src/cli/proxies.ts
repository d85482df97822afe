/** `proxybroker import | list | ban | unban | disable | enable`. */
import { redactSecrets } from "../security/redact.js";
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { SingleBar } from "cli-progress";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ProxyState } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { ProxyActionResult } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { Proxy as WireProxy } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { parseProxyLine } from "../config/proxies-file.js";
import { connect, type ConnectionOptions } from "./connection.js";
import { cliIO } from "./io.js";
import { CliExit, EXIT, fromRpc } from "./exit.js";
import { parseDuration, print, printJson, table } from "./format.js";

const BATCH = 1_000;
const STATES: Record<string, ProxyState> = {
  active: ProxyState.ACTIVE,
  quarantined: ProxyState.QUARANTINED,
  blacklisted: ProxyState.BLACKLISTED,
  disabled: ProxyState.DISABLED,
};
const STATE_NAMES = new Map(Object.entries(STATES).map(([k, v]) => [v, k.toUpperCase()]));

/** Options of `import`. */
interface ImportOptions extends ConnectionOptions {
  readonly tier?: string;
}

async function importFile(file: string, o: ImportOptions): Promise<void> {
  const text = await readFile(file, "utf8").catch((err: unknown) => {
    throw new CliExit(EXIT.usage, `cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
  });
  const specs: { url: string; tier: string; labels: Record<string, string>; line: number }[] = [];
  const rejected: { line: number; entry: string; reason: string }[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    try {
      const p = parseProxyLine(line);
      specs.push({ url: p.url, tier: p.tier === "" ? (o.tier ?? "") : p.tier, labels: p.labels, line: i + 1 });
    } catch (err) {
      // a rejected line is shown, never its password
      rejected.push({
        line: i + 1,
        entry: redactSecrets(line.split(/\s+/)[0] ?? ""),
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
      // AddProxies answers the rejected ones with their (redacted) URL: the line is the first chunk entry with that host:port
      for (const rej of r.rejected) {
        const at = chunk.find((s) => rej.url.includes(s.url.replace(/^[a-z0-9]+:\/\/([^@/]*@)?/, "")));
        rejected.push({ line: at?.line ?? 0, entry: redactSecrets(rej.url), reason: redactSecrets(rej.reason) });
      }
      bar?.update(Math.min(specs.length, i + chunk.length));
    }
  } catch (err) {
    throw fromRpc(err);
  } finally {
    bar?.stop();
    c.close();
  }
  rejected.sort((a, b) => a.line - b.line);
  if (o.json === true) printJson({ pool: o.pool, added, updated, rejected });
  else {
    print(`pool ${o.pool}: ${added} added, ${updated} updated, ${rejected.length} rejected`);
    for (const r of rejected) print(`  line ${r.line}: ${r.entry}: ${r.reason}`);
  }
  if (rejected.length > 0) throw new CliExit(EXIT.partial, "");
}

async function listProxies(o: ConnectionOptions & { state?: string; tier?: string; label?: string[] }): Promise<void> {
  const want = o.state === undefined ? undefined : STATES[o.state.toLowerCase()];
  if (o.state !== undefined && want === undefined)
    throw new CliExit(EXIT.usage, `--state must be one of ${Object.keys(STATES).join(", ")}`);
  const labels = (o.label ?? []).map((kv) => {
    const eq = kv.indexOf("=");
    if (eq <= 0) throw new CliExit(EXIT.usage, `--label ${kv} is not key=value`);
    return [kv.slice(0, eq), kv.slice(eq + 1)] as const;
  });
  const c = connect(o);
  const found: WireProxy[] = [];
  try {
    for (let token = ""; ; ) {
      const page = await c.admin.listProxies({ pool: o.pool, pageSize: 1_000, pageToken: token }, c.callOptions(30_000));
      for (const p of page.proxies) {
        if (want !== undefined && p.state !== want) continue;
        if (o.tier !== undefined && p.tier !== o.tier) continue;
        if (!labels.every(([k, v]) => p.labels[k] === v)) continue;
        found.push(p);
      }
      if (page.nextPageToken === "") break;
      token = page.nextPageToken;
    }
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
  if (o.json === true) {
    printJson(
      found.map((p) => ({
        id: p.id,
        url: p.url,
        tier: p.tier,
        labels: p.labels,
        score: p.score,
        state: STATE_NAMES.get(p.state) ?? "?",
        lastUsedBy: p.lastUsedBy,
      })),
    );
    return;
  }
  print(
    table(
      ["id", "url", "tier", "labels", "score", "state", "last used by"],
      found.map((p) => [
        p.id,
        p.url,
        p.tier,
        Object.entries(p.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(","),
        Math.round(p.score * 10) / 10,
        STATE_NAMES.get(p.state) ?? "?",
        p.lastUsedBy,
      ]),
    ),
  );
  print(`${found.length} proxies`);
}

type Action = "ban" | "unban" | "disable" | "enable";

async function act(action: Action, ids: readonly string[], o: ConnectionOptions & { domain?: string; ttl?: string }): Promise<void> {
  const c = connect(o);
  let r: ProxyActionResult | undefined;
  try {
    const opts = c.callOptions(30_000);
    const domain = o.domain ?? "";
    if (action === "ban") {
      if (o.ttl === undefined) throw new CliExit(EXIT.usage, "ban needs --ttl (e.g. 10m)");
      r = (await c.admin.banProxies({ pool: o.pool, ids: [...ids], domain, ttl: durationFromMs(parseTtl(o.ttl)) }, opts)).result;
    } else if (action === "unban") r = (await c.admin.unbanProxies({ pool: o.pool, ids: [...ids], domain }, opts)).result;
    else if (action === "disable") r = (await c.admin.disableProxies({ pool: o.pool, ids: [...ids] }, opts)).result;
    else r = (await c.admin.enableProxies({ pool: o.pool, ids: [...ids] }, opts)).result;
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
  const result = { changed: r?.changed ?? [], unchanged: r?.unchanged ?? [], notFound: r?.notFound ?? [] };
  if (o.json === true) printJson({ action, ...result });
  else {
    print(`${action}: ${result.changed.length} changed, ${result.unchanged.length} already so, ${result.notFound.length} not found`);
    for (const id of result.notFound) print(`  not found: ${id}`);
  }
  if (result.notFound.length > 0) throw new CliExit(EXIT.partial, "");
}

function parseTtl(text: string): number {
  try {
    return parseDuration(text);
  } catch (err) {
    throw new CliExit(EXIT.usage, `--ttl: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export function addProxyCommands(program: Command, common: (c: Command) => Command): void {
  common(
    program
      .command("import")
      .argument("<file>", "one proxy per line: host:port or scheme://user:pass@host:port, then tier=X and key=value labels")
      .description("add the proxies of a file (or update them), with progress; a summary of added, updated and rejected"),
  )
    .option("--tier <tier>", "tier of lines that name none")
    .action((file: string, o: ImportOptions) => importFile(file, o));
  common(program.command("list").description("the pool's proxies as a table (passwords shown as ***)"))
    .option("--state <state>", "active, quarantined, blacklisted or disabled")
    .option("--tier <tier>", "only this tier")
    .option("--label <k=v...>", "only proxies with these labels")
    .action((o: ConnectionOptions & { state?: string; tier?: string; label?: string[] }) => listProxies(o));
  for (const action of ["ban", "unban", "disable", "enable"] as const) {
    const cmd = common(program.command(action).argument("<ids...>", "proxy ids (host:port)"));
    if (action === "ban" || action === "unban")
      cmd.option("--domain <domain>", "a host or policy group (its domain-key); none = every domain");
    if (action === "ban") cmd.option("--ttl <duration>", "how long: 500ms, 30s, 10m, 2h");
    cmd.description(
      action === "ban"
        ? "ban proxies on one domain, or everywhere, for a while"
        : action === "unban"
          ? "lift a ban"
          : action === "disable"
            ? "no new grants (live leases run out)"
            : "grant them again",
    );
    cmd.action((ids: string[], o: ConnectionOptions & { domain?: string; ttl?: string }) => act(action, ids, o));
  }
}
