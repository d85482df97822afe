/** `proxybroker policy set | list | delete`. */
import type { Command } from "commander";
import { PacingMode } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { msOf } from "@proxybroker/sdk/wire";
import { connect, type ConnectionOptions } from "./connection.js";
import { CliExit, EXIT, fromRpc } from "./exit.js";
import { durationFlag } from "./duration-flag.js";
import { formatMs, print, printJson, table } from "./format.js";
import { describeExpectations, expectationOptions, expectationsOf, type ExpectationFlags } from "./policy-expectations.js";
import { describeIsolation, isolationJson, isolationOf, isolationOptions, type IsolationFlags } from "./policy-isolation.js";

interface SetOptions extends ConnectionOptions, ExpectationFlags, IsolationFlags {
  readonly group?: string;
  readonly maxConcurrency?: string;
  readonly minInterval?: string;
  readonly jitter?: string;
  readonly banTtl?: string;
  readonly defaultTtl?: string;
  readonly maxInterval?: string;
  readonly pacing?: string;
  readonly fixed?: boolean;
}

async function setPolicy(pattern: string, o: SetOptions): Promise<void> {
  const pacing =
    o.pacing === undefined
      ? PacingMode.UNSPECIFIED
      : o.pacing === "release"
        ? PacingMode.AFTER_RELEASE
        : o.pacing === "grant"
          ? PacingMode.AFTER_GRANT
          : undefined;
  if (pacing === undefined) throw new CliExit(EXIT.usage, "--pacing must be release or grant");
  const mc = o.maxConcurrency === undefined ? 0 : Number(o.maxConcurrency);
  if (!Number.isInteger(mc) || mc < 0) throw new CliExit(EXIT.usage, "--max-concurrency must be a whole number");
  const policy = {
    pattern,
    group: o.group ?? "",
    maxConcurrency: mc,
    pacing,
    fixedInterval: o.fixed === true,
    ...optional("minInterval", durationFlag("min-interval", o.minInterval)),
    ...optional("jitter", durationFlag("jitter", o.jitter)),
    ...optional("banTtl", durationFlag("ban-ttl", o.banTtl)),
    ...optional("defaultTtl", durationFlag("default-ttl", o.defaultTtl)),
    ...optional("maxInterval", durationFlag("max-interval", o.maxInterval)),
    ...optional("expectations", expectationsOf(o)),
    ...isolationOf(o),
  };
  const c = connect(o);
  try {
    const r = await c.admin.setDomainPolicy({ pool: o.pool, policy }, c.callOptions(10_000));
    if (o.json === true) printJson(r.policy);
    else print(`policy ${r.policy?.pattern ?? pattern} set in pool ${o.pool}`);
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

async function listPolicies(o: ConnectionOptions): Promise<void> {
  const c = connect(o);
  try {
    const { policies } = await c.admin.listDomainPolicies({ pool: o.pool }, c.callOptions(10_000));
    if (o.json === true) {
      printJson(
        policies.map((p) => ({
          pattern: p.pattern,
          group: p.group,
          maxConcurrency: p.maxConcurrency === 0 ? 1 : p.maxConcurrency,
          minIntervalMs: msOf(p.minInterval),
          jitterMs: msOf(p.jitter),
          banTtlMs: msOf(p.banTtl),
          pacing: PacingMode[p.pacing],
          ...isolationJson(p),
          ...(p.expectations === undefined
            ? {}
            : {
                expectations: {
                  blockMarkers: p.expectations.blockMarkers,
                  requiredMarkers: p.expectations.requiredMarkers,
                  minBytes: p.expectations.minBytes,
                  slowDownPatterns: p.expectations.slowDownPatterns,
                },
              }),
        })),
      );
      return;
    }
    print(
      table(
        ["pattern", "group", "max concurrency", "min interval", "jitter", "ban ttl", "pacing", "isolation", "expects"],
        policies.map((p) => [
          p.pattern,
          p.group,
          p.maxConcurrency === 0 ? 1 : p.maxConcurrency,
          formatMs(msOf(p.minInterval)),
          formatMs(msOf(p.jitter)),
          formatMs(msOf(p.banTtl)),
          p.pacing === PacingMode.AFTER_GRANT ? "grant" : "release",
          describeIsolation(p),
          describeExpectations(p.expectations),
        ]),
      ),
    );
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
}

async function deletePolicy(pattern: string, o: ConnectionOptions): Promise<void> {
  const c = connect(o);
  try {
    const { deleted } = await c.admin.deleteDomainPolicy({ pool: o.pool, pattern }, c.callOptions(10_000));
    if (o.json === true) printJson({ pattern, deleted });
    else print(deleted ? `policy ${pattern} deleted` : `no policy ${pattern} in pool ${o.pool}`);
    if (!deleted) throw new CliExit(EXIT.partial, "");
  } catch (err) {
    throw fromRpc(err);
  } finally {
    c.close();
  }
}

export function addPolicyCommands(program: Command, common: (c: Command) => Command): void {
  const policy = program.command("policy").description("domain policies of a pool: set, list, delete");
  const set = expectationOptions(
    common(policy.command("set").argument("<pattern>", "shop.example.com, *.example.com or *").description("create or replace a policy")),
  )
    .option("--group <name>", "hosts of this policy share one domain-key")
    .option("--max-concurrency <n>", "live leases per proxy and domain-key (default 1)")
    .option("--min-interval <duration>", "between two requests of one proxy to the domain-key")
    .option("--jitter <duration>", "up to this much added at random")
    .option("--pacing <anchor>", "release (from the end of the previous lease, default) or grant")
    .option("--ban-ttl <duration>", "ban length after a BLOCKED outcome")
    .option("--default-ttl <duration>", "lease TTL when the acquire names none")
    .option("--max-interval <duration>", "cap of adaptive pacing")
    .option("--fixed", "no adaptive pacing");
  isolationOptions(set).action((pattern: string, o: SetOptions) => setPolicy(pattern, o));
  common(policy.command("list").description("the pool's policies")).action((o: ConnectionOptions) => listPolicies(o));
  common(policy.command("delete").argument("<pattern>").description("delete a policy")).action((pattern: string, o: ConnectionOptions) =>
    deletePolicy(pattern, o),
  );
}
