import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { DenyReason, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { StreamClient, granted } from "../support/stream-client.js";
import { freePort } from "../support/broker-process.js";
import { tsEntryArgs } from "../support/node-ts.js";
import { startRedisServer } from "../support/redis-server.js";

const run = promisify(execFile);

function startProcess(env: Record<string, string>): {
  proc: ChildProcessWithoutNullStreams;
  output: () => string;
  exited: Promise<number | null>;
} {
  const proc = spawn(process.execPath, tsEntryArgs("src/main.ts"), { env: { ...process.env, REDIS_URL: "", ...env } });
  let out = "";
  proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
  proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  return { proc, output: () => out, exited };
}

async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The broker as a process: settings, reflection through buf curl, draining on SIGTERM. */
describe("broker process", () => {
  const procs: ChildProcessWithoutNullStreams[] = [];
  afterEach(() => {
    for (const p of procs.splice(0)) p.kill("SIGKILL");
  });

  it("refuses a Redis that may evict keys (a live lease could vanish), and says what to set; logs whether persistence is on", async () => {
    const evicting = await startRedisServer({ args: ["--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"] });
    const safe = await startRedisServer();
    try {
      const p = startProcess({ REDIS_URL: evicting.url, LISTEN_ADDRESS: `127.0.0.1:${await freePort()}` });
      procs.push(p.proc);
      expect(await p.exited).toBe(2);
      expect(p.output()).toMatch(/refusing to start: Redis maxmemory-policy is allkeys-lru.*Set maxmemory-policy noeviction/);
      const q = startProcess({ REDIS_URL: safe.url, LISTEN_ADDRESS: `127.0.0.1:${await freePort()}` });
      procs.push(q.proc);
      await waitFor(() => q.output().includes("listening"), 15_000);
      expect(q.output()).toMatch(/Redis persistence: AOF off, no RDB snapshots — a Redis restart loses the leases/);
    } finally {
      await evicting.stop();
      await safe.stop();
    }
  });

  it("npx proxybroker: --help lists serve, --version prints the version, serve runs the broker and SIGTERM drains it", async () => {
    const help = await run("npx", ["proxybroker", "--help"]);
    expect(help.stdout).toMatch(/serve\s+run the broker/);
    const version = await run("npx", ["proxybroker", "--version"]);
    expect(version.stdout.trim()).toBe(JSON.parse(await readFile("package.json", "utf8")).version);
    await expect(run("npx", ["proxybroker", "no-such-command"])).rejects.toMatchObject({ code: 2 });
    const port = await freePort();
    // the bin itself (npx runs it; npm exec, when signalled, exits by the signal itself)
    const proc = spawn(process.execPath, ["bin/proxybroker.js", "serve"], {
      env: { ...process.env, REDIS_URL: "", LISTEN_ADDRESS: `127.0.0.1:${port}`, SHUTDOWN_GRACE_MS: "1000" },
    });
    procs.push(proc);
    let out = "";
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
    await waitFor(() => out.includes(`listening on 127.0.0.1:${port}`), 20_000);
    proc.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(out).toMatch(/SIGTERM: draining[\s\S]*stopped/);
  });

  it("refuses to start on an invalid setting and names it", async () => {
    const p = startProcess({ LEASE_TTL_MIN_MS: "soon" });
    procs.push(p.proc);
    expect(await p.exited).toBe(2);
    expect(p.output()).toMatch(/LEASE_TTL_MIN_MS=soon is not an integer/);
  });

  it("serves reflection and health so buf curl lists and calls every method; drains on SIGTERM", async () => {
    const port = await freePort();
    const p = startProcess({ LISTEN_ADDRESS: `127.0.0.1:${port}`, SHUTDOWN_GRACE_MS: "2000" });
    procs.push(p.proc);
    await waitFor(() => p.output().includes("listening"), 15_000);
    const base = `http://127.0.0.1:${port}`;
    const buf = "node_modules/.bin/buf";
    const listed = await run(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-methods", base]);
    for (const m of [
      "proxybroker.v1.ProxyBroker/Lease",
      "proxybroker.v1.ProxyBroker/AcquireLease",
      "proxybroker.v1.ProxyAdmin/SetDomainPolicy",
      "grpc.health.v1.Health/Check",
    ]) {
      expect(listed.stdout).toContain(m);
    }
    const acquired = await run(buf, [
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      '{"workerId":"curl","domain":"example.com"}',
      `${base}/proxybroker.v1.ProxyBroker/AcquireLease`,
    ]);
    expect(JSON.parse(acquired.stdout).lease.proxy.id).toMatch(/:\d+$/);
    const health = await run(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", `${base}/grpc.health.v1.Health/Check`]);
    expect(JSON.parse(health.stdout).status).toBe("SERVING");

    // Hold every other proxy of the sample pool, then leave one acquire waiting.
    const channel = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const s = new StreamClient(createClient(ProxyBroker, channel));
    for (let i = 0; i < 4; i++) granted(await s.acquire({ domain: "example.com" }));
    const waiting = s.acquire({ domain: "example.com", maxWaitMs: 30_000 });
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    p.proc.kill("SIGTERM");
    const answer = await waiting;
    expect(answer.case).toBe("denied");
    if (answer.case === "denied") expect(answer.value.reason).toBe(DenyReason.UNAVAILABLE);
    expect(await p.exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(4_000);
    expect(p.output()).toMatch(/SIGTERM: draining/);
    channel.close();
  });

  it("reads AUTH_TOKENS_FILE at start (a bad one refuses to start) and again on SIGHUP (a bad one keeps the tokens in force)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "pb-tokens-"));
    const file = join(dir, "tokens");
    try {
      await writeFile(file, "short admin\n");
      const bad = startProcess({ AUTH_TOKENS_FILE: file });
      procs.push(bad.proc);
      expect(await bad.exited).toBe(2);
      expect(bad.output()).toMatch(/refusing to start: AUTH_TOKENS_FILE: .*line 1: a token must be at least 16/);

      const first = "first-admin-token-0001";
      const second = "second-admin-token-002";
      await writeFile(file, `${first} admin ops\n`);
      const port = await freePort();
      const p = startProcess({ LISTEN_ADDRESS: `127.0.0.1:${port}`, AUTH_TOKENS_FILE: file });
      procs.push(p.proc);
      await waitFor(() => p.output().includes("listening"), 15_000);
      expect(p.output()).toMatch(/authentication: 1 token\(s\)/);
      const channel = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      const admin = createClient(ProxyAdmin, channel);
      const withToken = (token: string) => {
        const metadata = new grpc.Metadata();
        metadata.set("authorization", `Bearer ${token}`);
        return admin.listProxies({ pool: "default" }, { metadata }).then(
          () => "OK",
          (err: grpc.ServiceError) => err.code,
        );
      };
      expect(await withToken(first)).toBe("OK");
      expect(await withToken(second)).toBe(grpc.status.UNAUTHENTICATED);

      await writeFile(file, `${second} admin\n`);
      p.proc.kill("SIGHUP");
      await waitFor(() => p.output().includes("SIGHUP: 1 token(s)"), 5_000);
      expect(await withToken(first)).toBe(grpc.status.UNAUTHENTICATED);
      expect(await withToken(second)).toBe("OK");

      await writeFile(file, `${second} superuser\n`);
      p.proc.kill("SIGHUP");
      await waitFor(() => p.output().includes("SIGHUP: kept the tokens in force"), 5_000);
      expect(await withToken(second)).toBe("OK");
      expect(p.output()).not.toContain(first);
      expect(p.output()).not.toContain(second);
      channel.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("says loudly that it runs without authentication", async () => {
    const port = await freePort();
    const p = startProcess({ LISTEN_ADDRESS: `127.0.0.1:${port}` });
    procs.push(p.proc);
    await waitFor(() => p.output().includes("listening"), 15_000);
    expect(p.output()).toMatch(/WARNING: no AUTH_TOKENS_FILE/);
    expect(p.output()).toMatch(/listening on 127\.0\.0\.1:\d+, plaintext/);
  });
});
