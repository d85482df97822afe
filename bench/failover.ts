/**
 * Failover and recovery of the SDK, measured: `npm run bench:failover`.
 *
 * A real redis-server and a real broker process; one SDK client runs acquire → release in a loop.
 * Each trial SIGKILLs the broker and measures the time to the first grant from the fallback pool
 * (failover), then restarts it and measures from the moment it listens to the first grant from
 * the broker again (recovery). Prints p50 / p99 / max over FAILOVER_TRIALS trials (default 20).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import type { LeaseSource } from "@proxybroker/sdk";
import { brokerProcess } from "../test/support/broker-process.js";
import { startRedisServer } from "../test/support/redis-server.js";
import { recordsLine } from "../crawl/records-line.js";

const TRIALS = Number(process.env["FAILOVER_TRIALS"] ?? 20);

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  const dir = await mkdtemp(join(tmpdir(), "pb-failover-"));
  tempDir = dir;
  await writeFile(join(dir, "proxies.txt"), Array.from({ length: 50 }, (_, i) => `10.8.0.${i + 1}:3128`).join("\n"));
  const broker = await brokerProcess({ redisUrl: redis.url, env: { PROXIES_FILE: join(dir, "proxies.txt") } });
  await broker.start();
  const client = new ProxyBrokerClient({
    address: broker.address,
    workerId: "failover-bench",
    breaker: { callTimeoutMs: 1_000, resetTimeoutMs: 250, volumeThreshold: 1 },
    fallback: { snapshotRefreshMs: 500 },
  });
  let stop = false;
  let last: { source: LeaseSource; at: number } = { source: "broker", at: 0 };
  let errors = 0;
  const loop = (async () => {
    for (let i = 0; !stop; i++) {
      try {
        const l = await client.acquire(`https://site${i % 10}.example/`);
        last = { source: l.source, at: performance.now() };
        await l.release({ kind: "SUCCESS" });
        // Fallback leases are granted without I/O: yield so timers (and the trial) can run.
        await new Promise((r) => setImmediate(r));
      } catch {
        errors++;
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  })();
  const until = async (source: LeaseSource, since: number): Promise<number> => {
    while (!(last.source === source && last.at > since)) await new Promise((r) => setTimeout(r, 1));
    return last.at - since;
  };

  await new Promise((r) => setTimeout(r, 1_000)); // a snapshot for the fallback pool
  const failover: number[] = [];
  const recovery: number[] = [];
  for (let t = 0; t < TRIALS; t++) {
    const killedAt = performance.now();
    await broker.kill();
    failover.push(await until("fallback", killedAt));
    await new Promise((r) => setTimeout(r, 300));
    await broker.start();
    const listeningAt = performance.now();
    recovery.push(await until("broker", listeningAt));
    process.stderr.write(`trial ${t + 1}: failover ${failover[t]!.toFixed(1)} ms, recovery ${recovery[t]!.toFixed(1)} ms\n`);
    await new Promise((r) => setTimeout(r, 300));
  }
  stop = true;
  await loop;
  await client.close();
  await broker.stop();
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
  tempDir = undefined;

  const show = (name: string, xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return `${name.padEnd(10)} n=${s.length}  p50 ${pct(s, 50).toFixed(1)} ms  p99 ${pct(s, 99).toFixed(1)} ms  max ${s[s.length - 1]!.toFixed(1)} ms`;
  };
  process.stdout.write(
    [
      `SDK failover/recovery over ${TRIALS} trials (broker SIGKILLed, then restarted on the same address):`,
      `${show("failover", failover)}   (kill → first fallback grant)`,
      `${show("recovery", recovery)}   (broker listening → first broker grant)`,
      `acquire errors seen by the caller: ${errors}`,
      "",
    ].join("\n"),
  );
}

/** The run's temporary directory (its proxy list) until it is removed: left behind only by a failure. */
let tempDir: string | undefined;

/** Last: where records went (a failed run may leave its temporary directory). */
function recordsWritten(): void {
  process.stdout.write(`${recordsLine("bench:failover", tempDir === undefined ? [] : [`${tempDir}/ (left behind by the failure)`])}\n`);
}

main().then(recordsWritten, (err: unknown) => {
  process.stderr.write(`failover bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  recordsWritten();
  process.exit(1);
});
