/** `proxybroker import | list | ban | unban | disable | enable`. */
import type { Command } from "commander";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ProxyState } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { ProxyActionResult } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { Proxy as WireProxy } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { collectLabel, runImport, type ImportOptions } from "./import.js";
import { connect, type ConnectionOptions } from "./connection.js";
import { CliExit, EXIT, fromRpc } from "./exit.js";
import { parseDuration, print, printJson, table } from "./format.js";
import { redactProxyUrl } from "../security/redact.js";

const STATES: Record<string, ProxyState> = {
  active: ProxyState.ACTIVE,
  quarantined: ProxyState.QUARANTINED,
  blacklisted: ProxyState.BLACKLISTED,
  disabled: ProxyState.DISABLED,
};
const STATE_NAMES = new Map(Object.entries(STATES).map(([k, v]) => [v, k.toUpperCase()]));

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
        url: redactProxyUrl(p.url),
        tier: p.tier,
        labels: p.labels,
        score: p.score,
        state: STATE_NAMES.get(p.state) ?? "?",
        lastUsedBy: p.lastUsedBy,
        exitIp: p.exitIp,
      })),
    );
    return;
  }
  print(
    table(
      ["id", "url", "tier", "labels", "score", "state", "exit", "last used by"],
      found.map((p) => [
        p.id,
        redactProxyUrl(p.url),
        p.tier,
        Object.entries(p.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(","),
        Math.round(p.score * 10) / 10,
        STATE_NAMES.get(p.state) ?? "?",
        p.exitIp === "" ? "-" : p.exitIp,
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
      .argument("[file]", "one proxy per line: host:port or scheme://user:pass@host:port, then tier=X and key=value labels")
      .description("add the proxies of a file, or those a --template makes (or update them); a summary of added, updated and rejected"),
  )
    .option("--tier <tier>", "tier of lines that name none; the tier of a template's proxies")
    .option("--template <url>", "a provider URL with {session} and {<label key>}, e.g. http://cust-{session}-country-{country}:PW@gw:7777")
    .option("--sessions <n>", "with --template: sessions per combination of label values (default 1)")
    .option("--label <key=v1,v2>", "with --template: a label and its values (repeat for more labels)", collectLabel)
    .action((file: string | undefined, o: ImportOptions) => runImport(file, o));
  common(program.command("list").description("the pool's proxies as a table (passwords shown as ***)"))
    .option("--state <state>", "active, quarantined, blacklisted or disabled")
    .option("--tier <tier>", "only this tier")
    .option("--label <k=v...>", "only proxies with these labels")
    .action((o: ConnectionOptions & { state?: string; tier?: string; label?: string[] }) => listProxies(o));
  for (const action of ["ban", "unban", "disable", "enable"] as const) {
    const cmd = common(program.command(action).argument("<ids...>", "proxy ids (host:port, or username@host:port)"));
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
