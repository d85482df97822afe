/**
 * N real tinyproxy instances on 127.0.0.1 (free ports), instance i sending from 127.0.0.(10+i),
 * so the target sites see N different client IPs. Each runs in the foreground (`-d`) as a child
 * process with its own config dir under a temp dir (owned by the tinyproxy user).
 */
import { execFileSync, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { chownSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

export interface TinyproxyInstance {
  /** `127.0.0.1:port`, what a worker connects to. */
  readonly address: string;
  /** The outgoing address the sites see. */
  readonly outgoing: string;
}

export interface Tinyproxies {
  readonly proxies: readonly TinyproxyInstance[];
  stop(): Promise<void>;
}

export interface TinyproxyOptions {
  readonly count: number;
  /** Binary; default `tinyproxy` (Debian: /usr/bin/tinyproxy). */
  readonly binary?: string;
  readonly startTimeoutMs?: number;
}

function config(dir: string, port: number, outgoing: string): string {
  return [
    "User tinyproxy",
    "Group tinyproxy",
    `Port ${port}`,
    "Listen 127.0.0.1",
    `Bind ${outgoing}`,
    "Timeout 60",
    `PidFile "${join(dir, "tinyproxy.pid")}"`,
    `LogFile "${join(dir, "tinyproxy.log")}"`,
    "LogLevel Warning",
    "MaxClients 200",
    "Allow 127.0.0.1",
    "DisableViaHeader Yes",
    "",
  ].join("\n");
}

function ids(name: string, flag: "-u" | "-g"): number {
  return Number(execFileSync("id", [flag, name], { encoding: "utf8" }).trim());
}

async function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

async function waitListening(child: ChildProcess, port: number, timeoutMs: number, output: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`tinyproxy on ${port} exited (${child.exitCode}): ${output()}`);
    if (await acceptsConnections(port)) return;
    if (Date.now() > deadline) throw new Error(`tinyproxy on ${port} did not listen within ${timeoutMs} ms: ${output()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Start `count` tinyproxies and wait until each accepts connections. */
export async function startTinyproxies(options: TinyproxyOptions): Promise<Tinyproxies> {
  const root = await mkdtemp(join(tmpdir(), "crawl-tinyproxy-"));
  const uid = ids("tinyproxy", "-u");
  const gid = ids("tinyproxy", "-g");
  chownSync(root, uid, gid);
  const children: ChildProcess[] = [];
  const proxies: TinyproxyInstance[] = [];
  const killAll = (): void => {
    for (const c of children) c.kill("SIGKILL");
  };
  process.once("exit", killAll);
  const stop = async (): Promise<void> => {
    process.removeListener("exit", killAll);
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once("exit", () => resolve());
            c.kill("SIGTERM");
          }),
      ),
    );
    await rm(root, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < options.count; i++) {
      const dir = join(root, `p${i}`);
      await mkdir(dir, { recursive: true });
      chownSync(dir, uid, gid);
      const port = await freePort();
      const outgoing = `127.0.0.${10 + i}`;
      const file = join(dir, "tinyproxy.conf");
      await writeFile(file, config(dir, port, outgoing));
      const child = spawn(options.binary ?? "tinyproxy", ["-d", "-c", file], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      const keep = (d: Buffer): void => {
        out = (out + d.toString()).slice(-2000);
      };
      child.stdout?.on("data", keep);
      child.stderr?.on("data", keep);
      child.once("error", (err) => keep(Buffer.from(String(err))));
      children.push(child);
      await waitListening(child, port, options.startTimeoutMs ?? 5_000, () => out);
      proxies.push({ address: `127.0.0.1:${port}`, outgoing });
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { proxies, stop };
}
