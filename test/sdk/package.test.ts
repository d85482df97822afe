/**
 * The SDK as a package: `npm pack --workspace sdk` gives a tarball that a fresh project outside
 * the repository installs; its compiled JavaScript leases a proxy from a real broker process, and
 * its type declarations check a TypeScript worker.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { brokerProcess, freePort } from "../support/broker-process.js";
import type { BrokerProcess } from "../support/broker-process.js";

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, "../..");

describe("the SDK package", () => {
  let dir: string;
  let broker: BrokerProcess;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "pb-sdk-package-"));
    broker = await brokerProcess({ redisUrl: "" });
    await broker.start();
  }, 60_000);
  afterAll(async () => {
    await broker?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("packs, installs in a project of its own, leases a proxy from the broker, and type-checks a worker", {
    timeout: 240_000,
  }, async () => {
    await run("npm", ["pack", "--workspace", "sdk", "--pack-destination", dir], { cwd: REPO, timeout: 120_000 });
    const tarball = (await readdir(dir)).find((f) => f.endsWith(".tgz"));
    expect(tarball).toMatch(/^proxybroker-sdk-\d+\.\d+\.\d+\.tgz$/);
    const { stdout: listing } = await run("tar", ["-tzf", join(dir, tarball!)]);
    expect(listing).toMatch(/package\/dist\/index\.js/);
    expect(listing).toMatch(/package\/dist\/index\.d\.ts/);
    expect(listing).toMatch(/package\/README\.md/);
    expect(listing).not.toMatch(/package\/src\//);

    const project = join(dir, "worker");
    await run("mkdir", ["-p", project]);
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "a-worker", version: "1.0.0", private: true, type: "module" }));
    await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(dir, tarball!)], { cwd: project, timeout: 180_000 });
    const installed = await readdir(join(project, "node_modules"));
    expect(installed).not.toContain("ioredis");

    await writeFile(
      join(project, "worker.mjs"),
      `import { ProxyBrokerClient } from "@proxybroker/sdk";
const client = new ProxyBrokerClient({ address: process.env.BROKER, workerId: "packed-worker" });
const lease = await client.acquire("shop.example.com", { maxWaitMs: 2000 });
console.log(JSON.stringify({ proxy: lease.proxy.id, source: lease.source, token: String(lease.fencingToken) }));
await lease.release({ kind: "SUCCESS", httpStatus: 200 });
await client.close();
`,
    );
    const { stdout } = await run(process.execPath, ["worker.mjs"], {
      cwd: project,
      env: { ...process.env, BROKER: broker.address },
      timeout: 30_000,
    });
    const got = JSON.parse(stdout.trim()) as { proxy: string; source: string; token: string };
    expect(got.source).toBe("broker");
    // an id of the sample pool (with its username when the url has one: docs/spec.md §11)
    expect(got.proxy).toMatch(/^(user@)?127\.0\.0\.1:\d+$/);

    await writeFile(
      join(project, "worker.ts"),
      `import { ProxyBrokerClient, NoProxyAvailableError, type Lease } from "@proxybroker/sdk";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
const client = new ProxyBrokerClient({ address: "127.0.0.1:50051" });
export async function once(): Promise<string> {
  try {
    const lease: Lease = await client.acquire("shop.example.com");
    await lease.release({ kind: "SUCCESS" });
    return lease.proxy.url;
  } catch (err) {
    if (err instanceof NoProxyAvailableError) return String(err.retryAfterMs);
    throw err;
  }
}
export const service: string = ProxyBroker.typeName;
`,
    );
    await writeFile(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          noEmit: true,
          skipLibCheck: false,
          types: [],
        },
        files: ["worker.ts"],
      }),
    );
    await run(process.execPath, [join(REPO, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], { cwd: project, timeout: 60_000 });
  });
  it("the packed root package installs beside it and its proxybroker command serves", { timeout: 240_000 }, async () => {
    const packs = join(dir, "root");
    await run("mkdir", ["-p", packs]);
    await run("npm", ["pack", "--pack-destination", packs], { cwd: REPO, timeout: 180_000 });
    await run("npm", ["pack", "--workspace", "sdk", "--pack-destination", packs], { cwd: REPO, timeout: 120_000 });
    const files = await readdir(packs);
    const root = files.find((f) => /^proxybroker-\d/.test(f));
    const sdk = files.find((f) => f.startsWith("proxybroker-sdk-"));
    const { stdout: listing } = await run("tar", ["-tzf", join(packs, root!)]);
    expect(listing).toMatch(/package\/bin\/proxybroker\.js/);
    expect(listing).toMatch(/package\/dist\/src\/cli\.js/);
    expect(listing).not.toMatch(/package\/src\//);
    const app = join(dir, "ops");
    await run("mkdir", ["-p", app]);
    await writeFile(join(app, "package.json"), JSON.stringify({ name: "ops", version: "1.0.0", private: true }));
    await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(packs, sdk!), join(packs, root!)], {
      cwd: app,
      timeout: 180_000,
    });
    const { stdout: version } = await run("npx", ["proxybroker", "--version"], { cwd: app });
    expect(version.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const port = await freePort();
    // the installed command itself, not through npx: a SIGTERM to npx left the server running
    const serve = spawn(join(app, "node_modules/.bin/proxybroker"), ["serve"], {
      cwd: app,
      env: { ...process.env, REDIS_URL: "", LISTEN_ADDRESS: `127.0.0.1:${port}` },
    });
    const exited = new Promise<number | null>((resolve) => serve.once("exit", (code) => resolve(code)));
    let out = "";
    serve.stderr.on("data", (d: Buffer) => (out += d.toString()));
    try {
      await expect.poll(() => out, { timeout: 30_000 }).toMatch(new RegExp(`listening on 127\\.0\\.0\\.1:${port}`));
      expect(out).toMatch(/node_modules\/proxybroker\/dist\/examples\/proxies\.txt/);
      // SIGTERM drains and exits (within SHUTDOWN_GRACE_MS, 10 s, and a margin for a busy machine)
      serve.kill("SIGTERM");
      const killer = setTimeout(() => serve.kill("SIGKILL"), 30_000);
      expect(await exited).toBe(0);
      clearTimeout(killer);
    } finally {
      if (serve.exitCode === null && serve.signalCode === null) serve.kill("SIGKILL");
    }
  });
});
