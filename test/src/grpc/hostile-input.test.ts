/**
 * Hostile input against a real broker process on its own redis-server: random and mutated
 * protobuf frames to every method and to the Lease stream, oversized frames, a renew flood, a
 * flood of waiting acquires, a report flood, invented pools. Every answer must be a clear status,
 * the broker must never exit, its memory must stay bounded, and the keys the floods leave in Redis
 * must all run out by themselves.
 */
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { DescMessage } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  AcquireLeaseRequestSchema,
  DenyReason,
  LeaseRequestSchema,
  LeaseResponseSchema,
  OutcomeKind,
  ProxyBroker,
  ProxyState,
} from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LeaseResponse } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { Health, HealthCheckResponse_ServingStatus } from "@proxybroker/sdk/gen/grpc/health/v1/health_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { brokerProcess, freePort } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { withRedis } from "../../support/with-redis.js";
import { seededRandom } from "../../support/fake-clock.js";
import { mutatedFrame, randomBytes, randomMessage } from "../../support/fuzz.js";
import { StreamClient } from "../../support/stream-client.js";

const PREFIX = "hostile";
const PROXIES = 20;
const MAX_IN_FLIGHT = 1_000;
const REPORTS_PER_MINUTE = 10_000;

/** Statuses a hostile request may get: each says what was wrong (INTERNAL only for an undecodable frame). */
const CLEAR = new Set([
  status("OK"),
  status("INVALID_ARGUMENT"),
  status("NOT_FOUND"),
  status("ABORTED"),
  status("RESOURCE_EXHAUSTED"),
  status("FAILED_PRECONDITION"),
]);

function status(name: keyof typeof grpc.status): number {
  return grpc.status[name];
}

interface Outcome {
  readonly code: number;
  readonly details: string;
}

const identity = (b: Buffer): Buffer => b;

/** One unary call with raw bytes; resolves with its status. */
function rawUnary(client: grpc.Client, path: string, payload: Uint8Array): Promise<Outcome> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, identity, Buffer.from(payload), { deadline: Date.now() + 20_000 }, (err) => {
      resolve(err === null ? { code: status("OK"), details: "" } : { code: err.code ?? -1, details: err.details ?? "" });
    });
  });
}

/**
 * One server-streaming call with raw bytes: its status, or OK when it was still open (a valid
 * WatchEvents follows events until cancelled) after `openMs`.
 */
function rawServerStream(client: grpc.Client, path: string, payload: Uint8Array, openMs = 2_000): Promise<Outcome> {
  return new Promise((resolve) => {
    const call = client.makeServerStreamRequest(path, identity, identity, Buffer.from(payload), { deadline: Date.now() + 20_000 });
    let done = false;
    const finish = (o: Outcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(o);
    };
    const timer = setTimeout(() => {
      finish({ code: status("OK"), details: "" });
      call.cancel();
    }, openMs);
    call.on("data", () => undefined);
    call.on("error", (err: grpc.ServiceError) => finish({ code: err.code, details: err.details }));
    call.on("status", (st: grpc.StatusObject) => finish({ code: st.code, details: st.details }));
  });
}

function expectClear(o: Outcome, what: string): void {
  const undecodable = o.code === status("INTERNAL") && o.details === "Error deserializing request";
  if (!CLEAR.has(o.code) && !undecodable) throw new Error(`${what}: ${grpc.status[o.code] ?? o.code} "${o.details}"`);
  if (o.code !== status("OK")) expect(o.details.length, what).toBeGreaterThan(0);
}

/** A Lease stream of raw frames: every answer decoded, the final status kept. */
class RawStream {
  readonly answers: LeaseResponse[] = [];
  ended: Outcome | undefined;
  private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;
  private waiters: Array<{ n: number; resolve: () => void }> = [];

  constructor(client: grpc.Client) {
    this.call = client.makeBidiStreamRequest("/proxybroker.v1.ProxyBroker/Lease", identity, identity);
    this.call.on("data", (b: Buffer) => {
      this.answers.push(fromBinary(LeaseResponseSchema, b));
      this.waiters = this.waiters.filter((w) => {
        if (this.answers.length < w.n) return true;
        w.resolve();
        return false;
      });
    });
    this.call.on("error", (err: grpc.ServiceError) => {
      this.ended = { code: err.code, details: err.details };
    });
    this.call.on("status", (s: grpc.StatusObject) => {
      this.ended ??= { code: s.code, details: s.details };
      for (const w of this.waiters) w.resolve();
    });
  }

  write(frame: Uint8Array): void {
    this.call.write(Buffer.from(frame));
  }

  send(init: Parameters<typeof create<typeof LeaseRequestSchema>>[1]): void {
    this.write(toBinary(LeaseRequestSchema, create(LeaseRequestSchema, init)));
  }

  /** Wait until `n` answers arrived in all (or the stream ended). */
  until(n: number, timeoutMs = 30_000): Promise<void> {
    if (this.answers.length >= n || this.ended !== undefined) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.answers.length} of ${n} answers after ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        n,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  close(): void {
    this.call.end();
  }
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0) / 1024;
}

function acquireFrame(
  over: Partial<{ requestId: string; domain: string; pool: string; workerId: string; maxWaitMs: number; ttlMs: number }>,
): Parameters<typeof create<typeof LeaseRequestSchema>>[1] {
  return {
    kind: {
      case: "acquire",
      value: {
        requestId: over.requestId ?? "r",
        workerId: over.workerId ?? "hostile-test",
        domain: over.domain ?? "a.example",
        pool: over.pool ?? "",
        ...(over.maxWaitMs !== undefined ? { maxWait: durationFromMs(over.maxWaitMs) } : {}),
        ...(over.ttlMs !== undefined ? { ttl: durationFromMs(over.ttlMs) } : {}),
      },
    },
  };
}

describe("hostile input (broker process on Redis)", () => {
  const redis = withRedis();
  const db = () => redis.admin();
  let broker: BrokerProcess;
  let client: grpc.Client;
  let metricsUrl: string;
  const rss: number[] = [];
  let rssTimer: NodeJS.Timeout | undefined;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "pb-hostile-"));
    const file = join(dir, "proxies.txt");
    writeFileSync(file, Array.from({ length: PROXIES }, (_, i) => `http://user:secret@10.77.0.${i + 1}:3128`).join("\n"));
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    broker = await brokerProcess({
      redisUrl: redis.url(),
      env: {
        REDIS_KEY_PREFIX: PREFIX,
        PROXIES_FILE: file,
        METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
        MAX_IN_FLIGHT_PER_STREAM: String(MAX_IN_FLIGHT),
        REPORT_OUTCOMES_PER_MINUTE: String(REPORTS_PER_MINUTE),
        // these floods load 2 cores with Redis, broker and client at once: what they check are the
        // broker's limits, not how it answers a Redis slower than the 1 s command timeout
        // (UNAVAILABLE "store unavailable", which a loaded CI machine then saw)
        REDIS_COMMAND_TIMEOUT_MS: "10000",
      },
    });
    await broker.start();
    client = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    rssTimer = setInterval(() => {
      const pid = broker.pid();
      if (pid !== undefined && broker.alive()) rss.push(rssMb(pid));
    }, 200);
  }, 60_000);

  afterAll(async () => {
    if (rssTimer !== undefined) clearInterval(rssTimer);
    client?.close();
    await broker?.stop();
  });

  const stillServing = async (): Promise<void> => {
    expect(broker.alive(), broker.output().slice(-2_000)).toBe(true);
    const health = createClient(Health, client);
    expect((await health.check({ service: "" })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    const api = createClient(ProxyBroker, client);
    const { lease } = await api.acquireLease({ workerId: "probe", domain: `probe-${Date.now()}.example` });
    expect(lease?.proxy?.url).toMatch(/^http:\/\/user:secret@10\.77\.0\.\d+:3128$/);
    await api.releaseLease({ leaseId: lease!.leaseId, fencingToken: lease!.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } });
  };

  it("random, structured-random and mutated frames to every worker method: a clear status each time", { timeout: 60_000 }, async () => {
    const r = seededRandom(0xbad);
    for (const method of ProxyBroker.methods) {
      if (method.methodKind !== "unary") continue;
      const path = `/${ProxyBroker.typeName}/${method.name}`;
      const input: DescMessage = method.input;
      const frames = [
        ...Array.from({ length: 40 }, () => toBinary(input, randomMessage(r, input))),
        ...Array.from({ length: 20 }, () => randomBytes(r, Math.floor(r() * 300))),
        ...Array.from({ length: 20 }, () => mutatedFrame(r, input)),
        ...Array.from({ length: 10 }, () => mutatedFrame(r, AcquireLeaseRequestSchema)),
      ];
      const outcomes = await Promise.all(frames.map((f) => rawUnary(client, path, f)));
      for (const [i, o] of outcomes.entries()) expectClear(o, `${method.name} frame ${i}`);
      // most of it is refused, and says why
      expect(outcomes.filter((o) => o.code === status("INVALID_ARGUMENT")).length, method.name).toBeGreaterThan(0);
    }
    await stillServing();
  });

  it("structured-random requests on one Lease stream are answered in-band and leave it open; an undecodable frame ends only that stream", {
    timeout: 60_000,
  }, async () => {
    const r = seededRandom(0x5eed);
    const s = new RawStream(client);
    const n = 600;
    for (let i = 0; i < n; i++) s.write(toBinary(LeaseRequestSchema, randomMessage(r, LeaseRequestSchema)));
    // then a well-formed acquire on the same stream: it is answered (granted) after all the rest
    s.send(acquireFrame({ requestId: "after-fuzz", domain: "after-fuzz.example" }));
    await s.until(1, 30_000);
    await expect
      .poll(() => s.answers.some((a) => a.kind.case === "granted" && a.kind.value.requestId === "after-fuzz"), { timeout: 30_000 })
      .toBe(true);
    expect(s.ended).toBeUndefined();
    const denied = s.answers.filter((a) => a.kind.case === "denied");
    expect(denied.length).toBeGreaterThan(n / 2);
    for (const a of denied) if (a.kind.case === "denied") expect(a.kind.value.message.length).toBeGreaterThan(0);
    s.close();

    const broken = new RawStream(client);
    broken.write(Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]));
    await expect.poll(() => broken.ended?.code, { timeout: 10_000 }).toBe(status("INTERNAL"));
    await stillServing();
  });

  it("oversized frames: RESOURCE_EXHAUSTED (gRPC's message limit, MAX_MESSAGE_BYTES), nothing else happens", {
    timeout: 60_000,
  }, async () => {
    const huge = toBinary(
      AcquireLeaseRequestSchema,
      create(AcquireLeaseRequestSchema, { workerId: "w", requestId: "big", targetUrl: `http://x.example/${"a".repeat(5 * 1024 * 1024)}` }),
    );
    const o = await rawUnary(client, `/${ProxyBroker.typeName}/AcquireLease`, huge);
    expect(o.code).toBe(status("RESOURCE_EXHAUSTED"));
    const s = new RawStream(client);
    s.write(
      toBinary(
        LeaseRequestSchema,
        create(LeaseRequestSchema, { kind: { case: "acquire", value: fromBinary(AcquireLeaseRequestSchema, huge) } }),
      ),
    );
    await expect.poll(() => s.ended?.code, { timeout: 10_000 }).toBe(status("RESOURCE_EXHAUSTED"));
    // a long but allowed target_url is refused by name
    const api = createClient(ProxyBroker, client);
    await expect(api.acquireLease({ workerId: "w", targetUrl: `http://x.example/${"a".repeat(10_000)}` })).rejects.toMatchObject({
      code: status("INVALID_ARGUMENT"),
      details: expect.stringMatching(/target_url is longer than 8192/),
    });
    await stillServing();
  });

  it("10,000 renews per second on one stream: each answered, the stream stays open, the excess over MAX_IN_FLIGHT_PER_STREAM denied in-band", {
    timeout: 60_000,
  }, async () => {
    const s = new RawStream(client);
    s.send(acquireFrame({ requestId: "held", domain: "renew-flood.example", ttlMs: 60_000 }));
    await s.until(1);
    const g = s.answers[0]!.kind;
    if (g.case !== "granted" || g.value.lease === undefined) throw new Error(`expected a grant, got ${g.case}`);
    const lease = g.value.lease;
    const before = await db().dbsize();
    const total = 20_000;
    const started = Date.now();
    for (let sent = 0; sent < total; sent += 100) {
      for (let i = 0; i < 100; i++)
        s.send({ kind: { case: "renew", value: { leaseId: lease.leaseId, fencingToken: lease.fencingToken } } });
      await new Promise((res) => setTimeout(res, 10));
    }
    const sendSeconds = (Date.now() - started) / 1000;
    await s.until(total + 1, 60_000);
    expect(s.ended).toBeUndefined();
    const renewed = s.answers.filter((a) => a.kind.case === "renewed").length;
    const limited = s.answers.filter((a) => a.kind.case === "denied" && a.kind.value.message.includes("MAX_IN_FLIGHT_PER_STREAM")).length;
    expect(renewed + limited).toBe(total);
    expect(renewed).toBeGreaterThan(0);
    // renews create no keys
    expect(await db().dbsize()).toBe(before);
    // Redis answers renews faster than they arrive, so the in-flight limit shows with requests that
    // stay unanswered: 1,500 acquires that wait (every proxy is busy for that domain) on one stream
    const others = new RawStream(client);
    for (let p = 1; p < PROXIES; p++) others.send(acquireFrame({ requestId: `other-${p}`, domain: "renew-flood.example", ttlMs: 60_000 }));
    await others.until(PROXIES - 1);
    const burst = 1_500;
    for (let i = 0; i < burst; i++) s.send(acquireFrame({ requestId: `burst-${i}`, domain: "renew-flood.example", maxWaitMs: 2_000 }));
    await s.until(total + 1 + burst, 30_000);
    const burstAnswers = s.answers.slice(total + 1);
    const burstLimited = burstAnswers.filter(
      (a) => a.kind.case === "denied" && a.kind.value.message.includes("MAX_IN_FLIGHT_PER_STREAM"),
    ).length;
    expect(burstLimited).toBe(burst - MAX_IN_FLIGHT);
    expect(burstAnswers.every((a) => a.kind.case === "denied" && a.kind.value.reason === DenyReason.NO_PROXY_AVAILABLE)).toBe(true);
    expect(s.ended).toBeUndefined();
    others.close();
    console.log(
      `renew flood: ${total} renews in ${sendSeconds.toFixed(1)} s on one stream → ${renewed} renewed, ${limited} denied in-band; ${burst} waiting acquires at once → ${burstLimited} denied in-band at once (MAX_IN_FLIGHT_PER_STREAM ${MAX_IN_FLIGHT})`,
    );
    s.send({
      kind: {
        case: "release",
        value: { leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } },
      },
    });
    await s.until(total + burst + 2);
    expect(s.answers.at(-1)?.kind.case).toBe("released");
    s.close();
    await stillServing();
  });

  it("100,000 acquires that would wait: MAX_WAITING (50,000) wait and are denied at their max_wait, the rest are refused in-band with a retry_after; memory stays bounded", {
    timeout: 180_000,
  }, async () => {
    const rssBefore = rss.at(-1) ?? 0;
    // every proxy busy for 25 domain-keys, so that every acquire for them waits
    const holder = new RawStream(client);
    const domains = Array.from({ length: 25 }, (_, i) => `wait-${i}.example`);
    // held far longer than the test may take on a loaded machine: no waiting acquire is granted
    for (const d of domains)
      for (let p = 0; p < PROXIES; p++) holder.send(acquireFrame({ requestId: `hold-${d}-${p}`, domain: d, ttlMs: 600_000 }));
    await holder.until(domains.length * PROXIES);
    expect(holder.answers.filter((a) => a.kind.case === "granted").length).toBe(domains.length * PROXIES);

    // connections of their own (grpc-js shares one per address otherwise, and MAX_STREAMS_PER_CONNECTION is 100)
    const channels = [0, 1].map(
      () => new grpc.Client(broker.address, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 }),
    );
    const streams: RawStream[] = [];
    for (let k = 0; k < 100; k++) {
      const s = new RawStream(channels[k % 2]!);
      for (let i = 0; i < MAX_IN_FLIGHT; i++)
        s.send(acquireFrame({ requestId: `w${k}-${i}`, domain: domains[k % domains.length]!, maxWaitMs: 15_000 }));
      streams.push(s);
    }
    const waiting = async (): Promise<number> =>
      Number(/proxybroker_waiting_acquires (\d+)/.exec(await (await fetch(metricsUrl)).text())?.[1] ?? 0);
    await expect.poll(waiting, { timeout: 14_000, interval: 250 }).toBe(50_000);
    const peak = rss.at(-1) ?? 0;
    // the waiting acquires, sampled until every answer is in: never more than MAX_WAITING
    let mostWaiting = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        mostWaiting = Math.max(mostWaiting, await waiting());
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    // every acquire is answered: the refusals at once, the rest at their max_wait (100,000 answers
    // take a while to arrive on a busy machine, so this waits for them all and then counts)
    await Promise.all(streams.map((s) => s.until(MAX_IN_FLIGHT, 100_000)));
    sampling = false;
    await sampler;
    const answers = streams.flatMap((s) => s.answers);
    expect(answers.length).toBe(100 * MAX_IN_FLIGHT);
    const others = answers.filter((a) => !(a.kind.case === "denied" && a.kind.value.reason === DenyReason.NO_PROXY_AVAILABLE));
    expect(others.slice(0, 3).map((a) => `${String(a.kind.case)} ${a.kind.case === "denied" ? a.kind.value.message : ""}`)).toEqual([]);
    const refused = answers.filter((a) => a.kind.case === "denied" && /MAX_WAITING\)/.test(a.kind.value.message));
    const waited = answers.filter((a) => a.kind.case === "denied" && a.kind.value.message === "no eligible proxy");
    // 50,000 waited and 50,000 were refused when all 100,000 came within one max_wait; on a machine
    // too slow for that, the first waiters' max_wait ends before the last acquires come, and those
    // take their places: more wait, fewer are refused, never more than MAX_WAITING at once
    expect(refused.length + waited.length).toBe(100_000);
    expect(waited.length).toBeGreaterThanOrEqual(50_000);
    expect(refused.length).toBeGreaterThan(0);
    expect(mostWaiting).toBe(50_000);
    expect(refused.every((a) => a.kind.case === "denied" && a.kind.value.retryAfter !== undefined)).toBe(true);
    expect(await waiting()).toBe(0);
    const maxRss = Math.max(...rss);
    console.log(
      `waiting flood: 100,000 acquires, ${waited.length} waited (at most ${mostWaiting} at once), ${refused.length} refused; broker RSS ${rssBefore.toFixed(0)} MB before, ${peak.toFixed(0)} MB with all waiting, ${maxRss.toFixed(0)} MB at most`,
    );
    expect(maxRss).toBeLessThan(1_024);
    for (const s of [...streams, holder]) s.close();
    for (const c of channels) c.close();
    await stillServing();
  });

  it("a flood of reported PROXY_ERRORs quarantines nothing, and a caller's reports are bounded per minute", {
    timeout: 60_000,
  }, async () => {
    const api = createClient(ProxyBroker, client);
    const admin = createClient(ProxyAdmin, client);
    const ids = Array.from({ length: PROXIES }, (_, i) => `user@10.77.0.${i + 1}:3128`);
    const outcomes = Array.from({ length: REPORTS_PER_MINUTE }, (_, i) => ({
      proxyId: ids[i % PROXIES]!,
      domain: "reports.example",
      outcome: { kind: OutcomeKind.PROXY_ERROR },
    }));
    const first = await api.reportOutcomes({ pool: "default", workerId: "flooder", outcomes });
    expect(first.applied).toBe(REPORTS_PER_MINUTE);
    const { proxies } = await admin.listProxies({ pool: "default", pageSize: 100 });
    expect(proxies.length).toBe(PROXIES);
    for (const p of proxies) expect(p.state, p.id).toBe(ProxyState.ACTIVE);
    await expect(api.reportOutcomes({ pool: "default", workerId: "flooder", outcomes: outcomes.slice(0, 1_000) })).rejects.toMatchObject({
      code: status("RESOURCE_EXHAUSTED"),
      details: expect.stringMatching(/REPORT_OUTCOMES_PER_MINUTE/),
    });
    // another worker still reports
    expect(
      (
        await api.reportOutcomes({
          pool: "default",
          workerId: "honest",
          outcomes: outcomes.slice(0, 5).map((o) => ({ ...o, outcome: { kind: OutcomeKind.SUCCESS } })),
        })
      ).applied,
    ).toBe(5);
    await stillServing();
  });

  it("acquires for invented pools and domain-keys leave no key in Redis and no label in the metrics", { timeout: 60_000 }, async () => {
    const api = createClient(ProxyBroker, client);
    const r = seededRandom(7);
    await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        api.acquireLease({ workerId: `inventor-${i}`, pool: `pool${Math.floor(r() * 1e9)}`, domain: `d${i}.example` }).then(
          () => "granted",
          (err: grpc.ServiceError) => err.code,
        ),
      ),
    ).then((codes) => expect(new Set(codes)).toEqual(new Set([status("RESOURCE_EXHAUSTED")])));
    // a snapshot of an invented pool is empty, and does not record its worker
    const snap = await api.getPoolSnapshot({ pool: "invented", workerId: "inventor" });
    expect(snap.proxies).toEqual([]);
    expect(snap.liveWorkers).toEqual([]);
    expect(await db().keys(`${PREFIX}:{pool*`)).toEqual([]);
    const text = await (await fetch(metricsUrl)).text();
    expect(text).not.toMatch(/pool="pool\d+"/);
    expect(text).not.toMatch(/secret/);
    await stillServing();
  });

  it("pings with invented worker ids and malformed or maximal claims: each answered with a pong, a malformed claim never acknowledged, the claims kept bounded", {
    timeout: 60_000,
  }, async () => {
    const stream = new StreamClient(createClient(ProxyBroker, client));
    const r = seededRandom(0x91);
    const until = timestampFromMs(Date.now() + 600_000);
    const keys = Array.from({ length: 64 }, (_, i) => ({
      domain: `k${i}.example`,
      shareKey: `k${i}.example`,
      whole: i % 2 === 0,
      untilTime: until,
    }));
    const malformed = [
      { version: 0n, members: ["m"], keys: [] },
      { version: 1n, members: ["m"], keys: Array.from({ length: 65 }, () => keys[0]!) },
      { version: 2n, members: ["with space"], keys: [] },
      { version: 3n, members: ["m"], keys: [{ domain: "k.example", shareKey: "#BAD GROUP", whole: true, untilTime: until }] },
      { version: 4n, members: ["m"], keys: [{ domain: "k.example", shareKey: "k.example", whole: true }] },
      { version: 2n ** 60n, members: ["m"], keys: [] },
    ];
    let malformedAcknowledged = 0;
    for (const [i, claim] of malformed.entries()) {
      const a = await stream.ping({ workerId: `bad-${i}`, pool: "default", fallbackPool: true, claim });
      expect(a.case).toBe("pong");
      if (a.case === "pong" && a.value.claimVersion !== 0n) malformedAcknowledged++;
    }
    expect(malformedAcknowledged).toBe(0);
    // 10,500 invented workers, more than a pool keeps (MAX_WORKERS_PER_POOL); the first 300 with a
    // maximal claim (64 keys, 2,000 members)
    const members = Array.from({ length: 2_000 }, (_, i) => `member-${i}`);
    const answers: Promise<unknown>[] = [];
    for (let i = 0; i < 10_500; i++) {
      const claim =
        i < 300
          ? { version: BigInt(i + 1), members, keys }
          : { version: BigInt(i + 1), members: [`inv-${i}`, `inv-${Math.floor(r() * 1e6)}`], keys: keys.slice(0, 2) };
      answers.push(stream.ping({ workerId: `inv-${i}`, pool: "default", fallbackPool: true, claim }));
      if (answers.length >= 500) await Promise.all(answers.splice(0));
    }
    const last = await Promise.all(answers);
    expect(last.every((a) => (a as { case: string }).case === "pong")).toBe(true);
    expect(await db().zcard(`${PREFIX}:{default}:wh`)).toBeLessThanOrEqual(10_000);
    // each claim is a key of its own that runs out by itself (within CLAIM_KEEP_MS)
    for (const k of (await db().keys(`${PREFIX}:{default}:wc:*`)).slice(0, 50)) expect(await db().pttl(k)).toBeGreaterThan(0);
    // a claim over the limits is never acknowledged: 2,001 members
    const over = await stream.ping({
      workerId: "over",
      pool: "default",
      fallbackPool: true,
      claim: { version: 1n, members: [...members, "one-more"], keys },
    });
    expect(over.case === "pong" && over.value.claimVersion).toBe(0n);
    stream.cancel();
    await stillServing();
  });

  it("after the floods every key they left in Redis runs out by itself", { timeout: 30_000 }, async () => {
    const keys = await db().keys(`${PREFIX}:*`);
    const persistent: string[] = [];
    for (const k of keys) if ((await db().pttl(k)) === -1) persistent.push(k);
    // only the pool itself stays: its proxies (ids with their username) and the proxies of each of
    // their hosts, indexes, meta and policies (admin data), the workers seen and heard (bounded)
    // and the reservations (one hash, replaced every second)
    const pool = `${PREFIX}:{default}:`;
    const allowed = /^(p:(user@)?10\.77\.0\.\d+:3128|h:10\.77\.0\.\d+|all|idx|m|ws|wf|wh|pol|polh|ad|rsv)$/;
    expect(persistent.filter((k) => !k.startsWith(pool) || !allowed.test(k.slice(pool.length)))).toEqual([]);
  });
  it("random, structured-random and mutated frames to every admin method (after the key check: admin calls may add proxies and policies): a clear status each time", {
    timeout: 60_000,
  }, async () => {
    const r = seededRandom(0xad);
    for (const method of ProxyAdmin.methods) {
      const path = `/${ProxyAdmin.typeName}/${method.name}`;
      const input: DescMessage = method.input;
      const frames = [
        ...Array.from({ length: 40 }, () => toBinary(input, randomMessage(r, input))),
        ...Array.from({ length: 15 }, () => randomBytes(r, Math.floor(r() * 300))),
        ...Array.from({ length: 15 }, () => mutatedFrame(r, input)),
      ];
      const call = method.methodKind === "server_streaming" ? rawServerStream : rawUnary;
      const outcomes = await Promise.all(frames.map((f) => call(client, path, f)));
      for (const [i, o] of outcomes.entries()) expectClear(o, `${method.name} frame ${i}`);
    }
    const text = await (await fetch(metricsUrl)).text();
    expect(text).not.toMatch(/secret/);
    await stillServing();
  });
});
