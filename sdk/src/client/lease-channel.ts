import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import type { ClientDuplexStream } from "@grpc/grpc-js";
import { LeaseRequestSchema, LostReason, OutcomeKind } from "../gen/proxybroker/v1/broker_pb.js";
import type {
  AcquireLeaseRequestSchema,
  LeaseRequest,
  LeaseResponse,
  PingSchema,
  Pong,
  ProxyBroker,
  ReleaseLeaseRequestSchema,
  RenewLeaseRequestSchema,
} from "../gen/proxybroker/v1/broker_pb.js";
import type { ClientOf } from "../wire/grpc-adapter.js";
import { BrokerClientError } from "./errors.js";

/** Errors of requests that were written to a stream that broke before their answer came. */
const unanswered = new WeakSet<Error>();

/**
 * The request was sent on a stream that broke before its answer came: the broker may have
 * carried it out (an acquire granted) without anyone hearing of it.
 */
export function sentWithoutAnswer(err: unknown): boolean {
  return err instanceof Error && unanswered.has(err);
}

/** One answer of the Lease stream. */
export type Answer = LeaseResponse["kind"];

interface Waiter {
  readonly resolve: (a: Answer) => void;
  readonly reject: (e: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/** Backoff of re-opening the stream after it broke. */
export interface ChannelBackoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

/**
 * The client side of the Lease stream: ONE bidi stream for every lease of the process, requests
 * correlated with their answers (acquires by request_id, renews and releases by lease_id). When
 * the stream breaks, every pending request fails with UNAVAILABLE and the next request opens a new
 * stream, after a backoff that doubles while streams keep breaking; leases are not lost with the
 * stream (SPEC G3), their heartbeats simply go out on the new one.
 */
export class LeaseChannel {
  private stream: ClientDuplexStream<LeaseRequest, LeaseResponse> | undefined;
  private readonly waiting = new Map<string, Waiter[]>();
  private backoffMs = 0;
  private reopenAt = 0;
  private lastBreak = "";
  private lastCode: status = status.UNAVAILABLE;
  private seq = 0;
  /**
   * Request ids are unique beyond this client: the broker answers a repeated (worker id, request
   * id) with the lease of the first, so a restarted worker with the same worker id must not reuse
   * its predecessor's ids.
   */
  private readonly idPrefix = randomBytes(6).toString("hex");
  private closed = false;

  constructor(
    private readonly opts: {
      readonly broker: ClientOf<typeof ProxyBroker>;
      readonly backoff: ChannelBackoff;
      readonly clock: () => number;
      /** Called for every answer the broker sends (it is reachable). */
      readonly onAnswer?: () => void;
      /** Called when the stream breaks (before pending requests fail). */
      readonly onBreak?: (why: string) => void;
      /** Called with every pong (answers to `ping`, matched by nothing: each says what it acknowledges). */
      readonly onPong?: (pong: Pong) => void;
      /** Called when the broker says unasked that a lease is lost (revoked: its pair was reserved for a silent worker). */
      readonly onRevoked?: (leaseId: string) => void;
      /** Called when the broker asks for a reusable lease back (LeaseWanted: another acquire waits for its key). */
      readonly onWanted?: (leaseId: string) => void;
    },
  ) {}

  /** A fresh request id. */
  nextRequestId(): string {
    return `${this.idPrefix}-${++this.seq}`;
  }

  /** Send an acquire; resolves with its granted or denied answer. */
  acquire(req: MessageInitShape<typeof AcquireLeaseRequestSchema> & { requestId: string }, timeoutMs: number): Promise<Answer> {
    const p = this.expect(`req:${req.requestId}`, timeoutMs);
    this.send({ case: "acquire", value: req }, [`req:${req.requestId}`]);
    return p;
  }

  /** Send a renew; resolves with renewed, lost, or denied (not carried out). */
  renew(req: MessageInitShape<typeof RenewLeaseRequestSchema> & { leaseId: string }, timeoutMs: number): Promise<Answer> {
    const p = this.expect(`lease:${req.leaseId}`, timeoutMs);
    this.send({ case: "renew", value: req }, [`lease:${req.leaseId}`]);
    return p;
  }

  /**
   * Send a release; resolves with released (its `next` inline), lost, or denied. A lost release
   * that carried `next` is followed by the next lease's own answer: `next` resolves with it.
   */
  release(
    req: MessageInitShape<typeof ReleaseLeaseRequestSchema> & { leaseId: string },
    timeoutMs: number,
  ): { answer: Promise<Answer>; next: Promise<Answer> | undefined } {
    const keys = [`lease:${req.leaseId}`];
    const answer = this.expect(keys[0]!, timeoutMs);
    const nextId = req.next?.requestId;
    let next: Promise<Answer> | undefined;
    if (nextId !== undefined && nextId !== "") {
      keys.push(`req:${nextId}`);
      next = this.expect(`req:${nextId}`, timeoutMs);
      next.catch(() => undefined);
    }
    this.send({ case: "release", value: req }, keys);
    return { answer, next };
  }

  /**
   * Send a liveness ping (docs/spec.md §7); its pong goes to `onPong`. Not sent (false) while the
   * stream is waiting to reconnect or the client is closed.
   */
  ping(value: MessageInitShape<typeof PingSchema>): boolean {
    if (this.closed || (this.stream === undefined && this.opts.clock() < this.reopenAt)) return false;
    const stream = this.stream ?? this.open();
    stream.write(create(LeaseRequestSchema, { kind: { case: "ping", value } }));
    return true;
  }

  /** Stop waiting for an answer that is no longer needed (e.g. `next` arrived inline). */
  forget(key: string): void {
    for (const w of this.waiting.get(key) ?? []) clearTimeout(w.timer);
    this.waiting.delete(key);
  }

  /** End the stream; pending requests fail. */
  close(): void {
    this.closed = true;
    this.stream?.end();
    this.failAll("client closed");
  }

  private expect(key: string, timeoutMs: number): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      // Not unref'd: a caller awaits this answer, and its deadline keeps the process alive until
      // it settles (an unref'd one let a process exit with its calls unsettled).
      const timer = setTimeout(() => {
        this.drop(key, w);
        reject(new BrokerClientError(status.DEADLINE_EXCEEDED, `no answer from the broker within ${timeoutMs} ms`));
      }, timeoutMs);
      const w: Waiter = { resolve, reject, timer };
      const list = this.waiting.get(key) ?? [];
      list.push(w);
      this.waiting.set(key, list);
    });
  }

  private drop(key: string, w: Waiter): void {
    const list = this.waiting.get(key);
    if (list === undefined) return;
    const i = list.indexOf(w);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.waiting.delete(key);
  }

  private send(kind: NonNullable<MessageInitShape<typeof LeaseRequestSchema>["kind"]>, keys: readonly string[]): void {
    const fail = (message: string, code: status = status.UNAVAILABLE) => {
      for (const k of keys) this.rejectKey(k, new BrokerClientError(code, message));
    };
    if (this.closed) {
      fail("client closed");
      return;
    }
    // The reason of the last break goes with it: it tells a broker that is gone from a slow one.
    // (a refused token keeps its code: the broker's answer, not an outage)
    if (this.stream === undefined && this.opts.clock() < this.reopenAt) {
      fail(`broker stream is reconnecting (${this.lastBreak})`, this.lastCode);
      return;
    }
    const stream = this.stream ?? this.open();
    stream.write(create(LeaseRequestSchema, { kind }));
  }

  private open(): ClientDuplexStream<LeaseRequest, LeaseResponse> {
    const stream = this.opts.broker.lease();
    this.stream = stream;
    stream.on("data", (res: LeaseResponse) => {
      this.backoffMs = 0;
      this.opts.onAnswer?.();
      this.deliver(res.kind);
    });
    const broken = (why: string, code: status = status.UNAVAILABLE) => {
      if (this.stream !== stream) return;
      this.stream = undefined;
      this.backoffMs = this.backoffMs === 0 ? this.opts.backoff.initialMs : Math.min(this.opts.backoff.maxMs, this.backoffMs * 2);
      this.reopenAt = this.opts.clock() + this.backoffMs;
      this.lastBreak = why;
      this.lastCode = code;
      this.opts.onBreak?.(why);
      this.failAll(why, code);
    };
    // A refused token is the broker's answer, not a failure to reach it: callers see that code.
    stream.on("error", (err: Error) => {
      const refused = refusedCode(err);
      if (refused !== undefined) this.opts.onAnswer?.();
      broken(`broker stream broke: ${err.message}`, refused ?? status.UNAVAILABLE);
    });
    stream.on("end", () => broken("broker ended the stream"));
    stream.on("close", () => broken("broker stream closed"));
    return stream;
  }

  private deliver(a: Answer): void {
    if (a.case === "pong") {
      this.opts.onPong?.(a.value);
      return;
    }
    if (a.case === "wanted") {
      this.opts.onWanted?.(a.value.leaseId);
      return;
    }
    const key = answerKey(a);
    const list = this.waiting.get(key);
    const w = list?.shift();
    if (list !== undefined && list.length === 0) this.waiting.delete(key);
    if (w === undefined) {
      if (a.case === "lost" && a.value.reason === LostReason.REVOKED) this.opts.onRevoked?.(a.value.leaseId);
      else this.giveBack(a);
      return;
    }
    clearTimeout(w.timer);
    w.resolve(a);
  }

  /**
   * A grant nobody waits for any more (its acquire timed out here first): released at once, so
   * that its pair is not leased to nobody until the TTL runs out. Its answer is not awaited.
   */
  private giveBack(a: Answer): void {
    const lease = a.case === "granted" ? a.value.lease : undefined;
    if (lease === undefined || this.closed || this.stream === undefined) return;
    this.stream.write(
      create(LeaseRequestSchema, {
        kind: {
          case: "release",
          value: { leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: { kind: OutcomeKind.ABANDONED } },
        },
      }),
    );
  }

  private rejectKey(key: string, err: Error): void {
    const list = this.waiting.get(key) ?? [];
    this.waiting.delete(key);
    for (const w of list) {
      clearTimeout(w.timer);
      w.reject(err);
    }
  }

  /** The stream broke (or closed): every request waiting on it was sent, and stays unanswered. */
  private failAll(why: string, code: status = status.UNAVAILABLE): void {
    for (const key of [...this.waiting.keys()]) {
      const err = new BrokerClientError(code, why);
      unanswered.add(err);
      this.rejectKey(key, err);
    }
  }
}

/** UNAUTHENTICATED or PERMISSION_DENIED when the stream ended with one of them. */
function refusedCode(err: Error): status | undefined {
  const code = "code" in err ? err.code : undefined;
  return code === status.UNAUTHENTICATED || code === status.PERMISSION_DENIED ? code : undefined;
}

/** The correlation key of an answer: `req:<request_id>` or `lease:<lease_id>`. */
export function answerKey(a: Answer): string {
  switch (a.case) {
    case "granted":
      return `req:${a.value.requestId}`;
    case "denied":
      return a.value.leaseId !== "" ? `lease:${a.value.leaseId}` : `req:${a.value.requestId}`;
    case "renewed":
    case "released":
    case "lost":
      return `lease:${a.value.leaseId}`;
    default:
      return "";
  }
}
