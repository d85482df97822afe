import { createServer } from "node:net";
import type { AddressInfo, Server, Socket } from "node:net";
import { ProxyAgent, errors as undiciErrors, fetch as undiciFetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Classifier, classifyError } from "../../../sdk/src/classify/index.js";
import { startForwardProxy } from "../../support/forward-proxy.js";
import type { ForwardProxy } from "../../support/forward-proxy.js";

/** Failures without a response: which side is to blame. */

const sysError = (code: string, extra: Record<string, string> = {}): Error =>
  Object.assign(new Error(`connect ${code} 10.0.0.9:3128`), { code, ...extra });
const fetchFailed = (cause: unknown): TypeError => new TypeError("fetch failed", { cause });

describe("classifyError (synthetic errors)", () => {
  it("proxy connect failures and timeouts are PROXY_ERROR", () => {
    for (const code of ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE"]) {
      const c = classifyError(sysError(code));
      expect(c, code).toMatchObject({ kind: "PROXY_ERROR", httpStatus: 0, retryAfterMs: 0 });
      expect(c.reason.startsWith(code)).toBe(true);
    }
  });

  it("undici's timeouts and socket errors are PROXY_ERROR", () => {
    const all = [
      new undiciErrors.ConnectTimeoutError(),
      new undiciErrors.HeadersTimeoutError(),
      new undiciErrors.BodyTimeoutError(),
      new undiciErrors.SocketError("other side closed"),
    ];
    for (const err of all) expect(classifyError(err).kind, err.name).toBe("PROXY_ERROR");
  });

  it("looks through fetch's TypeError and AggregateError for the cause", () => {
    expect(classifyError(fetchFailed(new undiciErrors.ConnectTimeoutError())).reason).toMatch(/^UND_ERR_CONNECT_TIMEOUT/);
    const happyEyeballs = new AggregateError([sysError("ECONNREFUSED"), sysError("ECONNREFUSED")], "connect failed");
    expect(classifyError(fetchFailed(happyEyeballs)).kind).toBe("PROXY_ERROR");
  });

  it("a tunnel refused with 407 or another status is PROXY_ERROR, though undici names it AbortError", () => {
    const e407 = new undiciErrors.RequestAbortedError("Proxy response (407) !== 200 when HTTP Tunneling");
    expect(e407.name).toBe("AbortError");
    expect(classifyError(e407)).toMatchObject({ kind: "PROXY_ERROR", reason: "proxy answered 407 (authentication required) to CONNECT" });
    const e502 = new undiciErrors.RequestAbortedError("Proxy response (502) !== 200 when HTTP Tunneling");
    expect(classifyError(fetchFailed(e502))).toMatchObject({ kind: "PROXY_ERROR", reason: "proxy answered 502 to CONNECT" });
  });

  it("a timeout signal is PROXY_ERROR; a plain abort by the caller is ABANDONED", () => {
    expect(classifyError(new DOMException("The operation was aborted due to timeout", "TimeoutError")).kind).toBe("PROXY_ERROR");
    expect(classifyError(new DOMException("This operation was aborted", "AbortError"))).toMatchObject({ kind: "ABANDONED" });
    // An AbortError caused by a timeout counts as the timeout.
    const wrapped = Object.assign(new DOMException("aborted", "AbortError"), { cause: new DOMException("timeout", "TimeoutError") });
    expect(classifyError(wrapped).kind).toBe("PROXY_ERROR");
    // Whichever side of the chain the abort is on, the specific cause wins.
    const resetThenAbort = Object.assign(sysError("ECONNRESET"), { cause: new DOMException("aborted", "AbortError") });
    expect(classifyError(resetThenAbort).kind).toBe("PROXY_ERROR");
  });

  it("SOCKS5 proxy errors are PROXY_ERROR", () => {
    expect(classifyError(sysError("UND_ERR_SOCKS5_REPLY_5")).kind).toBe("PROXY_ERROR");
  });

  it("ENOTFOUND for the target host is TARGET_ERROR; for the proxy's host PROXY_ERROR", () => {
    const dns = (hostname: string) => sysError("ENOTFOUND", { hostname, syscall: "getaddrinfo" });
    expect(classifyError(dns("shop.example.com"), { targetHost: "Shop.Example.com" }).kind).toBe("TARGET_ERROR");
    const proxy = classifyError(fetchFailed(dns("gate.proxyvendor.net")), { targetHost: "shop.example.com" });
    expect(proxy).toMatchObject({ kind: "PROXY_ERROR", reason: "ENOTFOUND: proxy host gate.proxyvendor.net does not resolve" });
    // Without a target host to compare with, the proxy is not blamed.
    expect(classifyError(dns("gate.proxyvendor.net")).kind).toBe("TARGET_ERROR");
  });

  it("a rejected TLS certificate is TARGET_ERROR", () => {
    expect(classifyError(sysError("CERT_HAS_EXPIRED")).kind).toBe("TARGET_ERROR");
  });

  it("anything unrecognised is ABANDONED, and says what it was", () => {
    expect(classifyError(new RangeError("parser bug"))).toMatchObject({
      kind: "ABANDONED",
      reason: "unrecognised error (RangeError: parser bug)",
    });
    expect(classifyError("boom").reason).toBe("unrecognised error (boom)");
    const cyclic: { cause?: unknown } = {};
    cyclic.cause = cyclic;
    expect(classifyError(cyclic).kind).toBe("ABANDONED");
  });

  it("errorKinds maps a code or name, per domain", () => {
    const c = new Classifier({ perDomain: { "flaky.example": { errorKinds: { ECONNRESET: "TARGET_ERROR", TimeoutError: "ABANDONED" } } } });
    expect(c.classifyError(sysError("ECONNRESET"), { targetHost: "flaky.example" }).kind).toBe("TARGET_ERROR");
    expect(c.classifyError(new DOMException("t", "TimeoutError"), { targetHost: "flaky.example" }).kind).toBe("ABANDONED");
    expect(c.classifyError(sysError("ECONNRESET"), { targetHost: "other.example" }).kind).toBe("PROXY_ERROR");
    // Inherited names are not rules.
    expect(c.classifyError(Object.assign(new Error("x"), { code: "toString" })).kind).toBe("ABANDONED");
  });
});

describe("classifyError (real undici errors on loopback)", () => {
  let denying: ForwardProxy;
  let silent: Server;
  const sockets = new Set<Socket>();
  let closedPort: number;

  beforeAll(async () => {
    denying = await startForwardProxy({ deny: true });
    // Accepts connections and never answers: a proxy that hangs.
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    closedPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  });
  afterAll(async () => {
    await denying.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  const caught = async (p: Promise<unknown>): Promise<unknown> =>
    p.then(
      () => expect.fail("expected a failure"),
      (e: unknown) => e,
    );

  it("fetch through a proxy that answers CONNECT with 407 → PROXY_ERROR", async () => {
    const dispatcher = new ProxyAgent(denying.url);
    try {
      const err = await caught(undiciFetch("https://shop.example.com/", { dispatcher }));
      expect(classifyError(err)).toMatchObject({ kind: "PROXY_ERROR", reason: "proxy answered 407 (authentication required) to CONNECT" });
    } finally {
      await dispatcher.close();
    }
  });

  it("a proxy port that refuses connections → PROXY_ERROR (ECONNREFUSED)", async () => {
    const dispatcher = new ProxyAgent(`http://127.0.0.1:${closedPort}`);
    try {
      const err = await caught(undiciFetch("https://shop.example.com/", { dispatcher }));
      const c = classifyError(err);
      expect(c.kind).toBe("PROXY_ERROR");
      expect(c.reason).toMatch(/ECONNREFUSED/);
    } finally {
      await dispatcher.close();
    }
  });

  it("a proxy that never answers → PROXY_ERROR via a timeout signal; a caller's abort → ABANDONED", async () => {
    // (undici's own headers timeout ticks in whole seconds; its error class is tested above.)
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`;
    const timedOut = await caught(undiciFetch(url, { signal: AbortSignal.timeout(50) }));
    expect(classifyError(timedOut)).toMatchObject({ kind: "PROXY_ERROR", reason: expect.stringMatching(/^timed out/) });
    const ac = new AbortController();
    const pending = caught(undiciFetch(url, { signal: ac.signal }));
    ac.abort();
    expect(classifyError(await pending).kind).toBe("ABANDONED");
  });
});
