import { request as httpRequest } from "node:http";
import type { IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect as tlsConnect } from "node:tls";
import type { HealthResult } from "@proxybroker/sdk/model";
import { exitIpOf } from "./exit-ip.js";

/**
 * One health check of one HTTP proxy: GET `targetUrl` through it. A 2xx answer passes, any other
 * answer fails, and no answer (refused, reset, timeout) is an error (SPEC §2: +3 / −10 / × 0.7).
 * http targets are fetched with an absolute-URI request, https targets through a CONNECT tunnel.
 * The first bytes of a passing answer are read for the exit IP it shows (exit-ip.ts, G9).
 */
export interface ProbeOptions {
  readonly proxyUrl: string;
  readonly targetUrl: string;
  readonly timeoutMs: number;
}

/** What one probe learned: its result, and the exit IP the answer showed ("" = none). */
export interface ProbeResult {
  readonly result: HealthResult;
  readonly exitIp: string;
}

/** An echo answer is short; more than this is not read. */
const MAX_BODY_BYTES = 4096;

export async function probeProxy(opts: ProbeOptions): Promise<ProbeResult> {
  const proxy = new URL(opts.proxyUrl);
  const target = new URL(opts.targetUrl);
  const auth: Record<string, string> =
    proxy.username !== ""
      ? {
          "proxy-authorization": `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString("base64")}`,
        }
      : {};
  try {
    const res = await withTimeout(
      target.protocol === "https:" ? viaTunnel(proxy, target, auth) : viaAbsoluteUri(proxy, target, auth),
      opts.timeoutMs,
    );
    const code = res.statusCode ?? 0;
    if (code < 200 || code >= 300) {
      res.resume();
      return { result: "fail", exitIp: "" };
    }
    const body = await withTimeout(headOf(res), opts.timeoutMs).catch(() => {
      res.destroy();
      return "";
    });
    return { result: "pass", exitIp: exitIpOf(body) };
  } catch {
    return { result: "error", exitIp: "" };
  }
}

/** Up to MAX_BODY_BYTES of an answer's body, as text; the rest is discarded. */
function headOf(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  return new Promise<string>((resolve) => {
    const done = (): void => resolve(Buffer.concat(chunks).toString("utf8"));
    res.on("data", (chunk: Buffer) => {
      if (size >= MAX_BODY_BYTES) return;
      chunks.push(chunk.subarray(0, MAX_BODY_BYTES - size));
      size += chunk.length;
      if (size >= MAX_BODY_BYTES) {
        res.destroy();
        done();
      }
    });
    res.once("end", done);
    res.once("error", done);
    res.once("close", done);
  });
}

function viaAbsoluteUri(proxy: URL, target: URL, auth: Record<string, string>): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: proxy.hostname.replace(/^\[|\]$/g, ""),
      port: Number(proxy.port),
      method: "GET",
      path: target.href,
      headers: { host: target.host, connection: "close", ...auth },
      agent: false,
    });
    req.once("response", resolve);
    req.once("error", reject);
    req.end();
  });
}

function viaTunnel(proxy: URL, target: URL, auth: Record<string, string>): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const authority = `${target.hostname}:${target.port || "443"}`;
    const connectReq = httpRequest({
      host: proxy.hostname.replace(/^\[|\]$/g, ""),
      port: Number(proxy.port),
      method: "CONNECT",
      path: authority,
      headers: { host: authority, ...auth },
      agent: false,
    });
    connectReq.once("connect", (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        resolve(res);
        return;
      }
      const req = httpsRequest({
        method: "GET",
        host: target.hostname,
        path: `${target.pathname}${target.search}`,
        headers: { host: target.host, connection: "close" },
        createConnection: () => tlsConnect({ socket, servername: target.hostname }),
      });
      req.once("response", resolve);
      req.once("error", reject);
      req.end();
    });
    connectReq.once("error", reject);
    connectReq.end();
  });
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
