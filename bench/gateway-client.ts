/**
 * The bench's clients: a plain-HTTP GET through a forward proxy (absolute form, as curl and
 * crawlers send it), and a CONNECT tunnel with an echo round trip through it.
 */
import { request } from "node:http";
import type { Agent } from "node:http";
import { connect } from "node:net";
import type { Socket } from "node:net";

export interface ProxiedGet {
  /** `host:port` of the proxy. */
  readonly proxy: string;
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** undefined: a new connection per request (no keep-alive). */
  readonly agent?: Agent;
  /** Give up (an error) after this long; default 30 s. */
  readonly timeoutMs?: number;
}

export interface Answer {
  readonly status: number;
  /** Body bytes received. */
  readonly bytes: number;
  /** From sending the request to the response's head, and to the body's end, ms. */
  readonly headMs: number;
  readonly ms: number;
}

function hostPort(address: string): { host: string; port: number } {
  const sep = address.lastIndexOf(":");
  return { host: address.slice(0, sep), port: Number(address.slice(sep + 1)) };
}

/** GET `url` through the proxy; the body is read and counted, not kept. */
export function proxiedGet(o: ProxiedGet): Promise<Answer> {
  const { host, port } = hostPort(o.proxy);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host, port, path: o.url, agent: o.agent ?? false, headers: { host: new URL(o.url).host, ...o.headers } },
      (res) => {
        const headMs = performance.now() - started;
        let bytes = 0;
        res.on("data", (chunk: Buffer) => {
          bytes += chunk.length;
        });
        res.once("end", () => resolve({ status: res.statusCode ?? 0, bytes, headMs, ms: performance.now() - started }));
        res.once("error", reject);
      },
    );
    req.setTimeout(o.timeoutMs ?? 30_000, () => req.destroy(new Error(`no answer within ${o.timeoutMs ?? 30_000} ms`)));
    req.once("error", reject);
    req.end();
  });
}

/** Read from `socket` until `until` returns true of what came; resolves with all of it. */
function readUntil(socket: Socket, until: (text: string) => boolean, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(
      () => finish(new Error(`timed out after ${timeoutMs} ms; got ${JSON.stringify(text.slice(0, 200))}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer): void => {
      text += chunk.toString("latin1");
      if (until(text)) finish(undefined);
    };
    const onEnd = (): void => finish(new Error(`closed; got ${JSON.stringify(text.slice(0, 200))}`));
    const finish = (err: Error | undefined): void => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("close", onEnd);
      socket.off("error", onEnd);
      if (err === undefined) resolve(text);
      else reject(err);
    };
    socket.on("data", onData);
    socket.once("close", onEnd);
    socket.once("error", onEnd);
  });
}

/** Send `text` into the tunnel and wait for the echo service to send it back; resolves with the round trip in ms. */
export async function echo(socket: Socket, text: string, timeoutMs = 30_000): Promise<number> {
  const started = performance.now();
  const back = readUntil(socket, (got) => got.length >= text.length, timeoutMs);
  socket.write(text);
  const got = await back;
  if (got !== text) throw new Error(`the echo came back as ${JSON.stringify(got.slice(0, 100))}`);
  return performance.now() - started;
}

/** A CONNECT tunnel to `target` (`host:port`) through the proxy, checked with one echo round trip. */
export async function openTunnel(proxy: string, target: string, timeoutMs = 30_000): Promise<Socket> {
  const { host, port } = hostPort(proxy);
  const socket = connect({ host, port });
  socket.setNoDelay(true);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("error", reject);
    });
    const head = readUntil(socket, (t) => t.includes("\r\n\r\n"), timeoutMs);
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    const answer = await head;
    if (!/^HTTP\/1\.[01] 200/.test(answer)) throw new Error(`CONNECT ${target}: ${answer.split("\r\n")[0] ?? ""}`);
    await echo(socket, `hello ${target}\n`, timeoutMs);
    return socket;
  } catch (err) {
    socket.destroy();
    throw err;
  }
}
