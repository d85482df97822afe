/**
 * The worker processes of a chaos run: slots of SDK, stub and gateway workers, each slot one
 * process at a time (`chaos/workers/<kind>-worker.ts`, started through `tsEntryArgs` so SIGKILL
 * reaches the worker itself). A slot keeps its worker id across restarts, as a restarted pod
 * keeps its name. SDK slot i and stub slot i put replica i mod 2 first (the SDK gets both in one
 * gRPC target, or only that one); stub workers turn to the other when one cannot serve.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { tsEntryArgs } from "../test/support/node-ts.js";
import type { WorkerKind } from "./records.js";
import type { SiteTarget, WorkerConfig } from "./workers/config.js";
import type { Progress } from "./workers/loop.js";

/** How a worker process ended. */
export interface WorkerExit {
  readonly workerId: string;
  readonly gen: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The harness SIGKILLed it (a fault), or it had to, at the end, after the grace. */
  readonly killed: "fault" | "end" | undefined;
  readonly at: number;
  /** The end of what it wrote on stderr. */
  readonly stderr: string;
}

export interface FleetOptions {
  /** Where the lease logs go (one file per process). */
  readonly logDir: string;
  readonly sdkWorkers: number;
  readonly stubWorkers: number;
  /** Worker processes that send plain HTTP through `gateway` (0: none). */
  readonly gatewayWorkers: number;
  readonly gateway?: string;
  readonly brokers: readonly string[];
  readonly sites: readonly SiteTarget[];
  readonly seed: number;
  /** The last moment a worker may start a lease (a cap; the harness stops them with SIGTERM). */
  readonly endAt: number;
  /** Everything else of a worker's configuration. */
  readonly worker: Pick<
    WorkerConfig,
    "concurrency" | "ttlMs" | "maxWaitMs" | "pagesPerLease" | "streamShare" | "streamMs" | "requestTimeoutMs" | "sdkFallback" | "sdkAddress"
  >;
}

interface Slot {
  readonly workerId: string;
  readonly kind: WorkerKind;
  readonly brokers: readonly string[];
  gen: number;
  child: ChildProcess | undefined;
  exited: Promise<void>;
  /** Progress of the running process, and the sum of the processes before it. */
  progress: Progress;
  earlierGrants: number;
  earlierFailures: Record<string, number>;
  killing: "fault" | "end" | undefined;
}

function addInto(into: Record<string, number>, from: Readonly<Record<string, number>>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

export class Fleet {
  readonly exits: WorkerExit[] = [];
  private readonly slots: Slot[];
  private started = 0;

  constructor(private readonly opts: FleetOptions) {
    const rotate = (i: number): string[] => opts.brokers.map((_, k) => opts.brokers[(i + k) % opts.brokers.length] ?? "");
    const make = (kind: WorkerKind, i: number): Slot => ({
      workerId: `chaos-${kind}-${i}`,
      kind,
      brokers: rotate(i),
      gen: -1,
      child: undefined,
      exited: Promise.resolve(),
      progress: { grants: 0, failures: {} },
      earlierGrants: 0,
      earlierFailures: {},
      killing: undefined,
    });
    this.slots = [
      ...Array.from({ length: opts.sdkWorkers }, (_, i) => make("sdk", i)),
      ...Array.from({ length: opts.stubWorkers }, (_, i) => make("stub", i)),
      ...Array.from({ length: opts.gatewayWorkers }, (_, i) => make("gateway", i)),
    ];
  }

  get size(): number {
    return this.slots.length;
  }

  /** Worker processes started so far. */
  get processesStarted(): number {
    return this.started;
  }

  /** Start every slot's first process. */
  start(): void {
    for (const s of this.slots) this.launch(s);
  }

  /** Leases granted so far, as the workers' progress lines say (the logs are the final count). */
  grants(): number {
    return this.slots.reduce((n, s) => n + s.earlierGrants + s.progress.grants, 0);
  }

  /** Failed acquires by kind, over every process. */
  failures(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.slots) {
      addInto(out, s.earlierFailures);
      addInto(out, s.progress.failures);
    }
    return out;
  }

  /** Every slot's running process has been granted a lease. */
  allGranting(): boolean {
    return this.slots.every((s) => s.progress.grants > 0);
  }

  /** The worker id of slot `index` (mod the slots). */
  slotName(index: number): string {
    return this.slots[index % this.slots.length]?.workerId ?? "";
  }

  /** SIGKILL slot `index`'s process, wait for its exit, and start the next one `downMs` later. */
  async killAndReplace(index: number, downMs: number): Promise<{ readonly workerId: string; readonly gen: number }> {
    const slot = this.slots[index % this.slots.length];
    if (slot === undefined) throw new Error("no worker slot");
    const gen = slot.gen;
    slot.killing = "fault";
    slot.child?.kill("SIGKILL");
    await slot.exited;
    await new Promise((r) => setTimeout(r, downMs));
    this.launch(slot);
    return { workerId: slot.workerId, gen };
  }

  /**
   * SIGTERM every worker (each finishes and releases its lease), wait up to `graceMs`, SIGKILL
   * the ones still running. Resolves with when the last one exited and which had to be killed.
   */
  async stop(graceMs: number): Promise<{ readonly lastExitAt: number; readonly notStopped: readonly string[] }> {
    for (const s of this.slots) s.child?.kill("SIGTERM");
    const notStopped: string[] = [];
    const timer = setTimeout(() => {
      for (const s of this.slots) {
        if (s.child !== undefined) {
          notStopped.push(`${s.workerId}#${s.gen}`);
          s.killing = "end";
          s.child.kill("SIGKILL");
        }
      }
    }, graceMs);
    await Promise.all(this.slots.map((s) => s.exited));
    clearTimeout(timer);
    return { lastExitAt: Math.max(0, ...this.exits.map((e) => e.at)), notStopped };
  }

  private launch(slot: Slot): void {
    addInto(slot.earlierFailures, slot.progress.failures);
    slot.earlierGrants += slot.progress.grants;
    slot.progress = { grants: 0, failures: {} };
    slot.gen += 1;
    slot.killing = undefined;
    this.started += 1;
    const gen = slot.gen;
    const config: WorkerConfig = {
      ...this.opts.worker,
      workerId: slot.workerId,
      kind: slot.kind,
      gen,
      brokers: slot.brokers,
      sites: this.opts.sites,
      logFile: join(this.opts.logDir, `${slot.workerId}.${gen}.jsonl`),
      seed: (this.opts.seed ^ Math.imul(this.started, 0x9e3779b1)) >>> 0,
      endAt: this.opts.endAt,
      ...(this.opts.gateway === undefined ? {} : { gateway: this.opts.gateway }),
    };
    const child = spawn(process.execPath, [...tsEntryArgs(`chaos/workers/${slot.kind}-worker.ts`), JSON.stringify(config)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    slot.child = child;
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr = (stderr + d.toString("utf8")).slice(-4_000);
    });
    if (child.stdout !== null) {
      createInterface({ input: child.stdout }).on("line", (line) => {
        try {
          const p = JSON.parse(line) as Progress;
          if (slot.gen === gen && typeof p.grants === "number") slot.progress = p;
        } catch {
          stderr = `${stderr}${line}\n`.slice(-4_000);
        }
      });
    }
    const killOnExit = (): void => {
      child.kill("SIGKILL");
    };
    process.once("exit", killOnExit);
    slot.exited = new Promise<void>((resolve) => {
      // "close", not "exit": its last progress line is read by then
      child.once("close", (code, signal) => {
        process.removeListener("exit", killOnExit);
        this.exits.push({ workerId: slot.workerId, gen, code, signal, killed: slot.killing, at: Date.now(), stderr });
        if (slot.child === child) slot.child = undefined;
        resolve();
      });
    });
  }
}
