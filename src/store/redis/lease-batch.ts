/**
 * Coalescing of lease operations (acquire, release, release-with-next) into leaseBatch-n.lua
 * calls: what reaches the store in one turn of the event loop goes to Redis as one script call per
 * pool (a pool's keys share one hash slot), so the call's fixed cost — the client's command, the
 * EVALSHA, the script's function definitions — is paid once per batch. Each operation stays its
 * own atomic step and is answered exactly as its own script would answer it; an operation alone
 * in its turn runs its own script, as before.
 */
import { ScriptReplyError, toStoreError } from "./errors.js";
import { asArray, num, str } from "./replies.js";
import type { ScriptRunner } from "./scripts.js";
import { argv, type ScriptArg } from "./script-args.js";

/** One lease operation for a batch. */
export interface LeaseOp {
  /** A acquire, R release, N release-with-next (leaseBatch-n.lua). */
  readonly code: "A" | "R" | "N";
  /** Its keys, as leaseBatch-n.lua takes them. */
  readonly keys: readonly string[];
  /** Its arguments, as leaseBatch-n.lua takes them (no `now`). */
  readonly args: readonly ScriptArg[];
  /** The store clock when it was asked ("" = Redis TIME). */
  readonly now: string;
  /** Run it alone with its own script (given `now`); resolves with that script's raw reply. */
  readonly alone: (now: string) => Promise<unknown>;
}

/** Operations per script call at most (a batch's Redis time grows with it). */
export const DEFAULT_MAX_BATCH = 32;

interface Queued {
  readonly op: LeaseOp;
  readonly resolve: (reply: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/** Options of a `LeaseBatcher`. */
export interface LeaseBatcherOptions {
  readonly runner: ScriptRunner;
  /** Operations per script call at most; 1 = every operation runs its own script. Default 32. */
  readonly maxBatch?: number;
}

/** The error reply of one operation of a batch, as Redis would have answered it alone. */
export class OpReplyError extends Error {
  override readonly name = "ReplyError";
}

export class LeaseBatcher {
  private readonly runner: ScriptRunner;
  private readonly maxBatch: number;
  private queued = new Map<string, Queued[]>();
  private scheduled = false;

  constructor(options: LeaseBatcherOptions) {
    this.runner = options.runner;
    this.maxBatch = Math.max(1, Math.floor(options.maxBatch ?? DEFAULT_MAX_BATCH));
  }

  /** Run `op` of `pool` in the next batch; resolves with its raw reply (as its own script's). */
  submit(pool: string, op: LeaseOp): Promise<unknown> {
    if (this.maxBatch === 1) return op.alone(op.now);
    return new Promise<unknown>((resolve, reject) => {
      let list = this.queued.get(pool);
      if (list === undefined) {
        list = [];
        this.queued.set(pool, list);
      }
      list.push({ op, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const queued = this.queued;
    this.queued = new Map();
    this.scheduled = false;
    for (const list of queued.values()) {
      for (let i = 0; i < list.length; i += this.maxBatch) this.send(list.slice(i, i + this.maxBatch));
    }
  }

  private send(batch: readonly Queued[]): void {
    const [only] = batch;
    if (batch.length === 1 && only !== undefined) {
      only.op.alone(only.op.now).then(only.resolve, only.reject);
      return;
    }
    const keys: string[] = [];
    // the batch's clock: the latest asked for (with Redis TIME every op asked "")
    let now = "";
    for (const { op } of batch) {
      if (op.now !== "" && (now === "" || Number(op.now) > Number(now))) now = op.now;
    }
    const args: ScriptArg[] = argv("batch", { now });
    for (const { op } of batch) {
      for (const k of op.keys) keys.push(k);
      args.push(...argv("batchOp", { code: op.code, count: op.args.length }));
      for (const a of op.args) args.push(a);
    }
    this.runner.runVariadic("leaseBatch", keys, args).then(
      (reply) => settle(batch, reply),
      (err: unknown) => {
        for (const q of batch) q.reject(err);
      },
    );
  }
}

/** Hand each operation its part of a leaseBatch reply. */
function settle(batch: readonly Queued[], reply: unknown): void {
  let a: unknown[];
  try {
    a = asArray(reply);
  } catch (err: unknown) {
    for (const q of batch) q.reject(err);
    return;
  }
  let i = 0;
  for (const q of batch) {
    try {
      if (i >= a.length) throw new ScriptReplyError("leaseBatch answered fewer operations than it was given");
      const n = num(a, i);
      if (n < 0) {
        q.reject(toStoreError(new OpReplyError(str(a, i + 1))));
        i += 2;
      } else {
        q.resolve(a.slice(i + 1, i + 1 + n));
        i += 1 + n;
      }
    } catch (err: unknown) {
      q.reject(err);
    }
  }
}
