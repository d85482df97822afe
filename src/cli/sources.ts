/**
 * `proxybroker source add | list | remove | refresh`: a pool's proxy list URLs, fetched by the broker's
 * health-check leader every interval (docs/spec.md §11). A headers file is named by its path on
 * the broker's machine; its contents are read there, never here, and never printed.
 */
import { isAbsolute, resolve } from "node:path";
import type { Command } from "commander";
import type { Source } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { epochMsOf, msOf } from "@proxybroker/sdk/wire";
import { connect, type ConnectionOptions } from "./connection.js";
import { durationFlag } from "./duration-flag.js";
import { CliExit, EXIT, fromRpc } from "./exit.js";
import { formatMs, print, printJson, table } from "./format.js";
import { redactSourceKey, redactSourceUrl } from "../security/redact.js";

interface AddOptions extends ConnectionOptions {
  readonly format?: string;
  readonly path?: string;
  readonly headersFile?: string;
  readonly interval?: string;
  readonly tier?: string;
  readonly label?: string[];
}

/** What `--json` prints of a source. */
function sourceJson(s: Source): Record<string, unknown> {
  return {
    id: s.id,
    pool: s.pool,
    // the broker shows it so already; again so that an older broker's is too
    url: redactSourceUrl(s.url),
    format: s.format,
    jsonPath: s.jsonPath,
    headersFile: s.headersFile,
    intervalMs: msOf(s.interval),
    tier: s.tier,
    labels: s.labels,
    lastRefreshAt: epochMsOf(s.lastRefreshTime),
    lastSuccessAt: epochMsOf(s.lastSuccessTime),
    lastResult: s.lastResult,
    lastError: s.lastError,
    listed: s.listed,
    added: s.added,
    removed: s.removed,
    owned: s.owned,
  };
}

function labelsOf(pairs: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of pairs ?? []) {
    for (const part of kv.split(",")) {
      const eq = part.indexOf("=");
      if (eq <= 0) throw new CliExit(EXIT.usage, `--label ${part} is not key=value`);
      out[part.slice(0, eq)] = part.slice(eq + 1);
    }
  }
  return out;
}

async function addSource(url: string, o: AddOptions): Promise<void> {
  const format = o.format ?? (o.path !== undefined ? "json" : "lines");
  if (format !== "lines" && format !== "json") throw new CliExit(EXIT.usage, `--format ${format}: lines or json`);
  const interval = durationFlag("interval", o.interval);
  const headersFile = o.headersFile === undefined ? "" : isAbsolute(o.headersFile) ? o.headersFile : resolve(o.headersFile);
  const c = connect(o);
  try {
    const r = await c.admin.addSource(
      {
        pool: o.pool,
        url,
        format,
        jsonPath: o.path ?? "",
        headersFile,
        ...(interval === undefined ? {} : { interval }),
        tier: o.tier ?? "",
        labels: labelsOf(o.label),
      },
      c.callOptions(15_000),
    );
    const s = r.source;
    if (s === undefined) throw new CliExit(EXIT.failed, "the broker answered no source");
    if (o.json === true) {
      printJson({ ...sourceJson(s), created: r.created });
      return;
    }
    print(
      `${r.created ? "added" : "replaced"} source ${s.id} of pool ${s.pool}: ${redactSourceUrl(s.url)}, ${s.format}${s.jsonPath !== "" ? ` at ${s.jsonPath}` : ""}, every ${formatMs(msOf(s.interval))}${s.headersFile !== "" ? `, headers from ${s.headersFile}` : ""}`,
    );
    print("(the broker leading the health checks fetches it now and then every interval: proxybroker source list)");
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
}

async function listSources(o: ConnectionOptions): Promise<void> {
  const c = connect(o);
  try {
    const { sources } = await c.admin.listSources({ pool: o.pool }, c.callOptions(15_000));
    if (o.json === true) {
      printJson(sources.map(sourceJson));
      return;
    }
    if (sources.length === 0) {
      print(`pool ${o.pool} has no sources`);
      return;
    }
    const now = Date.now();
    const when = (t: number): string => (t === 0 ? "never" : `${formatMs(Math.max(0, now - t))} ago`);
    print(
      table(
        ["id", "url", "every", "last refresh", "result", "listed", "owned", "last change"],
        sources.map((s) => [
          s.id,
          redactSourceUrl(s.url),
          formatMs(msOf(s.interval)),
          when(epochMsOf(s.lastRefreshTime)),
          s.lastResult === "" ? "–" : s.lastError === "" ? s.lastResult : `${s.lastResult}: ${s.lastError}`,
          s.listed,
          s.owned,
          `+${s.added} −${s.removed}`,
        ]),
      ),
    );
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
}

async function removeSource(source: string, o: ConnectionOptions): Promise<void> {
  const c = connect(o);
  try {
    const r = await c.admin.removeSource({ pool: o.pool, source }, c.callOptions(15_000));
    const shown = redactSourceKey(source);
    if (o.json === true) printJson({ removed: r.removed });
    else print(r.removed ? `removed source ${shown} (the proxies it added stay in the pool)` : `no source ${shown} in pool ${o.pool}`);
    if (!r.removed) throw new CliExit(EXIT.partial, "");
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
}

async function refreshSource(source: string, o: ConnectionOptions): Promise<void> {
  const c = connect(o);
  try {
    const { source: s } = await c.admin.refreshSource({ pool: o.pool, source }, c.callOptions(120_000));
    if (s === undefined) throw new CliExit(EXIT.failed, "the broker answered no source");
    if (o.json === true) printJson(sourceJson(s));
    else if (s.lastResult === "ok") print(`source ${s.id}: ${s.listed} listed, ${s.added} added, ${s.removed} removed`);
    else print(`source ${s.id}: ${s.lastResult}: ${s.lastError}; nothing changed`);
    if (s.lastResult !== "ok") throw new CliExit(EXIT.failed, "");
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
}

export function addSourceCommands(program: Command, common: (c: Command) => Command): void {
  const source = program.command("source").description("a pool's proxy list URLs, refreshed by the broker: add, list, remove, refresh");
  common(
    source
      .command("add")
      .argument("<url>", "http(s) URL answering the list")
      .description("add a source (or replace the one with this URL)"),
  )
    .option("--format <format>", "lines (one proxy a line) or json (default: json with --path, else lines)")
    .option("--path <path>", "json: dotted path to the array (data.proxies), or to a field of its objects (proxies[].url)")
    .option("--headers-file <file>", "`Name: value` lines sent with each fetch (API keys): a path on the broker's machine")
    .option("--interval <duration>", "how often it is fetched (default 5m, at least 10s)")
    .option("--tier <tier>", "tier of the proxies it adds")
    .option("--label <k=v...>", "labels of the proxies it adds")
    .action((url: string, o: AddOptions) => addSource(url, o));
  common(source.command("list").description("the pool's sources and their last refresh")).action((o: ConnectionOptions) => listSources(o));
  common(source.command("remove").argument("<id|url>").description("remove a source (the proxies it added stay)")).action(
    (s: string, o: ConnectionOptions) => removeSource(s, o),
  );
  common(
    source
      .command("refresh")
      .argument("<id|url>")
      .description("fetch a source now, on the broker answering; exit 1 when it changed nothing"),
  ).action((s: string, o: ConnectionOptions) => refreshSource(s, o));
}
