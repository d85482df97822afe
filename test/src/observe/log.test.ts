import { describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { createLogger } from "../../../src/observe/log.js";
import { logLevel } from "../../../src/config/log-level.js";
import { startBroker } from "../../support/broker.js";
import { StreamClient, granted } from "../../support/stream-client.js";

function sink(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const lines = (): Record<string, unknown>[] =>
    chunks
      .join("")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { stream, lines };
}

describe("log", () => {
  it("writes JSON lines with level, time and message", () => {
    const out = sink();
    const log = createLogger({ env: {}, destination: out.stream });
    log.info("listening on 127.0.0.1:1");
    const [line] = out.lines();
    expect(line).toMatchObject({ level: "info", service: "proxybroker", msg: "listening on 127.0.0.1:1" });
    expect(typeof line?.["time"]).toBe("string");
  });

  it("never writes a proxy password, in the message or in a field", () => {
    const out = sink();
    const log = createLogger({ env: {}, destination: out.stream });
    log.info("bad proxy http://bob:hunter2@10.0.0.1:8080");
    log.info({ proxy: { url: "http://bob:hunter2@10.0.0.1:8080" }, urls: ["socks5://a:b@h:1"] }, "fields");
    const text = JSON.stringify(out.lines());
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("a:b@");
    expect(text).toContain("bob:***@10.0.0.1:8080");
  });

  it("takes its level from LOG_LEVEL: debug lines only when asked", () => {
    const quiet = sink();
    createLogger({ env: {}, destination: quiet.stream }).debug("acquire");
    expect(quiet.lines()).toEqual([]);
    const loud = sink();
    createLogger({ env: { LOG_LEVEL: "DEBUG" }, destination: loud.stream }).debug({ requestId: "r1" }, "acquire");
    expect(loud.lines()[0]).toMatchObject({ level: "debug", requestId: "r1", msg: "acquire" });
  });

  it("logs at info when LOG_LEVEL is not a level (the settings refuse it before)", () => {
    expect(logLevel({ LOG_LEVEL: "chatty" })).toEqual({ level: "info", bad: "chatty" });
    expect(logLevel({ LOG_LEVEL: " Warn " })).toEqual({ level: "warn" });
  });

  it("at debug, logs each lease call of a real broker with its request id and lease id", async () => {
    const out = sink();
    const b = await startBroker({ kind: "embedded", logger: createLogger({ env: { LOG_LEVEL: "debug" }, destination: out.stream }) });
    const s = new StreamClient(b.broker);
    try {
      await b.admin.addProxies({ proxies: [{ url: "http://u:secret@10.0.0.1:8080" }] });
      const lease = granted(await s.acquire({ domain: "shop.example.com" }));
      await s.release(lease.leaseId, lease.fencingToken);
    } finally {
      s.cancel();
      await b.stop();
    }
    const calls = out.lines().filter((l) => l["msg"] === "acquire" || l["msg"] === "release");
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({ level: "debug", host: "shop.example.com", granted: true });
    expect(String(calls[0]?.["requestId"])).not.toBe("");
    expect(calls[1]).toMatchObject({ outcome: "SUCCESS", released: true });
    expect(calls[1]?.["leaseId"]).toBeTruthy();
    expect(JSON.stringify(out.lines())).not.toContain("secret");
  });
});
