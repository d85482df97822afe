/** `proxybroker stats | check | watch | audit`. */
import type { Command } from "commander";
import { SingleBar } from "cli-progress";
import { PoolEventKind } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { CheckProxiesResponse, WatchEventsResponse } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { epochMsOf, msOf } from "@proxybroker/sdk/wire";
import { connect, type ConnectionOptions } from "./connection.js";
import { cliIO } from "./io.js";
import { CliExit, EXIT, fromRpc } from "./exit.js";
import { eventDetail, formatMs, print, printJson, table } from "./format.js";

async function stats(o: ConnectionOptions): Promise<void> {
  const c = connect(o);
  try {
    const opts = c.callOptions(15_000);
    const [pool, domains] = await Promise.all([
      c.admin.getPoolStats({ pool: o.pool }, opts),
      c.admin.getDomainStats({ pool: o.pool }, opts),
    ]);
    const rows = domains.domains.map((d) => ({
      domain: d.domain,
      grantsPerMinute: d.grantsLastMinute,
      bansLastHour: d.bansLastHour,
      coolDownsLastHour: d.coolDownsLastHour,
      effectiveIntervalMs: msOf(d.effectiveInterval),
    }));
    const summary = {
      pool: o.pool,
      total: pool.total,
      active: pool.active,
      quarantined: pool.quarantined,
      blacklisted: pool.blacklisted,
      disabled: pool.disabled,
      liveWorkers: pool.liveWorkers,
    };
    if (o.json === true) {
      printJson({ ...summary, domains: rows });
      return;
    }
    print(
      `pool ${o.pool}: ${pool.total} proxies — ${pool.active} active, ${pool.quarantined} quarantined, ${pool.blacklisted} blacklisted, ${pool.disabled} disabled; ${pool.liveWorkers} live workers`,
    );
    if (rows.length > 0) {
      print("");
      print(
        table(
          ["domain-key", "grants/min", "bans (1 h)", "cool-downs (1 h)", "pacing"],
          rows.map((r) => [r.domain, r.grantsPerMinute, r.bansLastHour, r.coolDownsLastHour, formatMs(r.effectiveIntervalMs)]),
        ),
      );
      print(
        "(grants counted by the broker answering; bans and cool-downs from the pool's event stream; pacing: the interval between two requests of one proxy now, policy and adaptive)",
      );
    }
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
}

async function check(o: ConnectionOptions): Promise<void> {
  const c = connect(o);
  const bar =
    o.json === true
      ? undefined
      : new SingleBar({
          format: "checking [{bar}] {value}/{total}  {passed} passed, {failed} failed, {errors} errors",
          stream: cliIO().err,
          noTTYOutput: true,
          notTTYSchedule: 1_000,
        });
  let last: CheckProxiesResponse["progress"];
  try {
    const call = c.admin.checkProxies({ pool: o.pool }, c.callOptions());
    await new Promise<void>((resolve, reject) => {
      call.on("data", (m: CheckProxiesResponse) => {
        const p = m.progress;
        if (p === undefined) return;
        if (last === undefined) bar?.start(p.total, 0, { passed: 0, failed: 0, errors: 0 });
        last = p;
        bar?.update(p.checked, { passed: p.passed, failed: p.failed, errors: p.errors });
        if (o.json === true && p.proxyId !== "") printJson({ proxy: p.proxyId, result: p.result });
      });
      call.on("error", reject);
      call.on("end", () => resolve());
    });
  } catch (err) {
    throw fromRpc(err);
  } finally {
    bar?.stop();
    c.close();
  }
  const p = last ?? { total: 0, checked: 0, passed: 0, failed: 0, errors: 0 };
  if (o.json === true)
    printJson({ pool: o.pool, total: p.total, checked: p.checked, passed: p.passed, failed: p.failed, errors: p.errors });
  else print(`pool ${o.pool}: ${p.checked} checked — ${p.passed} passed, ${p.failed} failed, ${p.errors} errors`);
}

async function watch(o: ConnectionOptions & { grants?: boolean; count?: string }): Promise<void> {
  const limit = o.count === undefined ? Infinity : Number(o.count);
  if (!(limit > 0)) throw new CliExit(EXIT.usage, "--count must be a positive number");
  const c = connect(o);
  const call = c.admin.watchEvents({ pool: o.pool, grants: o.grants === true }, c.callOptions());
  let seen = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      process.once("SIGINT", () => resolve());
      call.on("data", (m: WatchEventsResponse) => {
        const e = m.event;
        if (e === undefined) return;
        const kind = PoolEventKind[e.kind] ?? String(e.kind);
        if (o.json === true)
          printJson({
            id: e.id,
            time: new Date(epochMsOf(e.time)).toISOString(),
            kind,
            proxy: e.proxyId,
            domain: e.domain,
            detail: e.detail,
            actor: e.actor,
          });
        else
          print(
            `${new Date(epochMsOf(e.time)).toISOString()}  ${kind.padEnd(10)} ${e.proxyId.padEnd(21)} ${e.domain.padEnd(20)} ${eventDetail(kind, e.detail, epochMsOf(e.time))}${e.actor !== "" ? `  (${e.actor})` : ""}`.trimEnd(),
          );
        if (++seen >= limit) resolve();
      });
      call.on("error", (err: Error & { code?: number }) => (err.code === 1 ? resolve() : reject(err)));
      call.on("end", () => resolve());
    });
  } catch (err) {
    throw fromRpc(err);
  } finally {
    call.cancel();
    c.close();
  }
}

async function audit(o: ConnectionOptions & { limit?: string }): Promise<void> {
  const c = connect(o);
  try {
    const { entries } = await c.admin.listAudit({ limit: o.limit === undefined ? 50 : Number(o.limit) }, c.callOptions(10_000));
    const rows = entries.map((e) => ({
      time: new Date(epochMsOf(e.time)).toISOString(),
      actor: e.actor,
      method: e.method,
      pool: e.pool,
      detail: e.detail,
    }));
    if (o.json === true) printJson(rows);
    else
      print(
        table(
          ["time", "actor", "method", "pool", "what"],
          rows.map((r) => [r.time, r.actor === "" ? "-" : r.actor, r.method, r.pool, r.detail]),
        ),
      );
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
}

export function addObserveCommands(program: Command, common: (c: Command) => Command): void {
  common(
    program
      .command("stats")
      .description("the pool at a glance: proxies by state, live workers; per domain-key grants/min, bans and pacing"),
  ).action((o: ConnectionOptions) => stats(o));
  common(program.command("check").description("one health-check pass over the pool now, with progress")).action((o: ConnectionOptions) =>
    check(o),
  );
  common(
    program
      .command("watch")
      .description("follow the pool's events (bans, quarantines, admin actions, policies, leader changes) until Ctrl-C"),
  )
    .option("--grants", "also the leases the broker grants")
    .option("--count <n>", "stop after this many events")
    .action((o: ConnectionOptions & { grants?: boolean; count?: string }) => watch(o));
  common(program.command("audit").description("the newest admin calls"))
    .option("--limit <n>", "how many (default 50)")
    .action((o: ConnectionOptions & { limit?: string }) => audit(o));
}
