/**
 * The faults of a chaos run: a seeded schedule (the same CHAOS_SEED gives the same faults in the
 * same order, with the same targets, pauses and down times), and the injector that carries them
 * out one after the other — each is over (the process or Redis is back) before the pause to the
 * next one starts.
 *
 * - worker-kill: SIGKILL a worker process, start its slot's next process after the down time;
 * - broker-kill: SIGKILL a broker replica, restart it on the same address;
 * - broker-term: SIGTERM a replica (it drains), restart it;
 * - redis-restart: SHUTDOWN NOSAVE or SIGKILL (half each), restart on the same AOF directory;
 * - redis-wipe: FLUSHALL under the running brokers (on every master); with an isolation group,
 *   the harness then sets its policies again, as an operator would (`afterWipe`), and the fault is
 *   over once they are;
 * - gateway-kill: SIGKILL the gateway, start it again on its address after the down time;
 * - redis-failover (CHAOS_REDIS=sentinel or cluster): SIGKILL the master of the pool's keys, a
 *   replica is promoted, the old master restarts after the down time and rejoins as a replica.
 */
import { appendFileSync } from "node:fs";
import { seededRandom } from "../test/support/fake-clock.js";
import type { Cluster } from "./cluster.js";
import type { Fleet } from "./fleet.js";
import type { FaultKind } from "./options.js";
import type { RedisFaultDone } from "./redis-topology.js";

/** One planned fault. */
export interface PlannedFault {
  readonly kind: FaultKind;
  /** Pause after the previous fault was over, ms. */
  readonly gapMs: number;
  /** Uniform in [0, 1): picks the target (worker slot, replica). */
  readonly pick: number;
  /** How long the target stays down, ms. */
  readonly downMs: number;
  /** For redis-restart: how Redis goes down. */
  readonly redisStop: "shutdown-nosave" | "sigkill";
}

/**
 * The endless fault schedule of a seed: rounds, each every enabled kind once in a seeded order,
 * plus one more worker kill when that kind is enabled (the cheapest fault, and the commonest in
 * real fleets) — so a short run sees every kind.
 */
export function* faultSchedule(opts: {
  readonly seed: number;
  readonly kinds: readonly FaultKind[];
  readonly gapMs: readonly [number, number];
  readonly downMs: readonly [number, number];
}): Generator<PlannedFault> {
  const random = seededRandom(opts.seed ^ 0x5eed_fa17);
  const between = ([lo, hi]: readonly [number, number]): number => Math.round(lo + random() * (hi - lo));
  if (opts.kinds.length === 0) return;
  for (;;) {
    const round = [...opts.kinds, ...(opts.kinds.includes("worker-kill") ? (["worker-kill"] as const) : [])];
    for (let i = round.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      const a = round[i];
      const b = round[j];
      if (a === undefined || b === undefined) continue;
      round[i] = b;
      round[j] = a;
    }
    for (const kind of round) {
      yield {
        kind,
        gapMs: between(opts.gapMs),
        pick: random(),
        downMs: between(opts.downMs),
        redisStop: random() < 0.5 ? "shutdown-nosave" : "sigkill",
      };
    }
  }
}

/** A fault as carried out. */
export interface FaultEvent {
  readonly kind: FaultKind;
  readonly target: string;
  readonly detail: string;
  /** Epoch ms: the fault hit, and everything was back. */
  readonly at: number;
  readonly backAt: number;
  /** Epoch ms of the fault's own moments (a failover: killedAt, promotedAt, rejoinedAt). */
  readonly marks?: Readonly<Record<string, number>>;
  readonly error?: string;
}

export type FaultCounts = Record<FaultKind | "redis-restart-shutdown" | "redis-restart-sigkill", number>;

export function noFaults(): FaultCounts {
  return {
    "worker-kill": 0,
    "broker-kill": 0,
    "broker-term": 0,
    "redis-restart": 0,
    "redis-wipe": 0,
    "redis-failover": 0,
    "gateway-kill": 0,
    "redis-restart-shutdown": 0,
    "redis-restart-sigkill": 0,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class FaultInjector {
  readonly events: FaultEvent[] = [];
  readonly counts: FaultCounts = noFaults();

  constructor(
    private readonly opts: {
      readonly cluster: Cluster;
      readonly fleet: Fleet;
      /** JSON lines, one per fault. */
      readonly logFile: string;
      readonly say: (line: string) => void;
      /** Right after a FLUSHALL (at `wipedAt`): the operator's repair; what it did, for the log. */
      readonly afterWipe?: (wipedAt: number) => Promise<string>;
    },
  ) {}

  /** Carry out faults from `schedule` until `keepGoing()` says no (checked before each). */
  async run(schedule: Iterator<PlannedFault>, keepGoing: () => boolean): Promise<void> {
    for (;;) {
      const next = schedule.next();
      if (next.done === true) return;
      const f = next.value;
      const until = Date.now() + f.gapMs;
      while (Date.now() < until && keepGoing()) await sleep(Math.min(100, until - Date.now()));
      if (!keepGoing()) return;
      await this.inject(f);
    }
  }

  /** One fault, until its target is back. */
  async inject(f: PlannedFault): Promise<FaultEvent> {
    const at = Date.now();
    let done: RedisFaultDone = { target: "", detail: "" };
    let error: string | undefined;
    try {
      done = await this.carryOut(f);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const { target, detail } = done;
    const event: FaultEvent = {
      kind: f.kind,
      target,
      detail,
      at,
      backAt: Date.now(),
      ...(done.marks !== undefined ? { marks: done.marks } : {}),
      ...(error !== undefined ? { error } : {}),
    };
    this.events.push(event);
    if (error === undefined) {
      this.counts[f.kind] += 1;
      if (f.kind === "redis-restart") this.counts[f.redisStop === "sigkill" ? "redis-restart-sigkill" : "redis-restart-shutdown"] += 1;
    }
    appendFileSync(this.opts.logFile, `${JSON.stringify(event)}\n`);
    this.opts.say(`fault ${f.kind} ${target} ${detail}${error !== undefined ? ` FAILED: ${error}` : ""} (${event.backAt - at} ms)`);
    return event;
  }

  private async carryOut(f: PlannedFault): Promise<RedisFaultDone> {
    const { cluster, fleet } = this.opts;
    switch (f.kind) {
      case "worker-kill": {
        const index = Math.floor(f.pick * fleet.size);
        const { workerId, gen } = await fleet.killAndReplace(index, f.downMs);
        return { target: `${workerId}#${gen}`, detail: `SIGKILL, next process after ${f.downMs} ms` };
      }
      case "broker-kill":
      case "broker-term": {
        const replica = cluster.replicas[Math.floor(f.pick * cluster.replicas.length)];
        if (replica === undefined) throw new Error("no replica");
        if (f.kind === "broker-kill") await replica.process.kill();
        else await replica.process.stop();
        await sleep(f.downMs);
        await replica.process.start();
        return {
          target: `broker ${replica.name} ${replica.process.address}`,
          detail: `${f.kind === "broker-kill" ? "SIGKILL" : "SIGTERM (drain)"}, restarted after ${f.downMs} ms`,
        };
      }
      case "redis-restart":
        return cluster.redis.restart(f.redisStop, f.downMs);
      case "redis-wipe": {
        const wipedAt = Date.now();
        const wiped = await cluster.redis.wipe();
        const repair = this.opts.afterWipe === undefined ? "" : `; ${await this.opts.afterWipe(wipedAt)}`;
        return { target: wiped.target, detail: `${wiped.detail}${repair}` };
      }
      case "redis-failover":
        return cluster.redis.failover(f.downMs);
      case "gateway-kill": {
        if (cluster.gateway === undefined) throw new Error("no gateway runs (CHAOS_GATEWAY_WORKERS=0)");
        return cluster.gateway.killAndRestart(f.downMs);
      }
    }
  }
}
