import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { BodySample } from "./body-sample.js";

/** What went back to the gateway's client: status, headers, the body's first bytes and its size. */
export interface Observed {
  status: number;
  headers: Record<string, string>;
  /** A status was written (by the upstream's answer or by the proxy server's own error). */
  answered: boolean;
  /** The proxy server wrote it itself (an upstream it could not reach): nothing came from the site. */
  own: boolean;
  /** The body's first 64 KiB and its size. */
  body: BodySample;
}

/**
 * Watch a response as the proxy server writes it, without buffering it: the status and headers
 * as sent, the first 64 KiB of the body, and its size. `extraHeaders()` are added to the head (the
 * lease's proxy and source). `hold(status)` may keep an error answer from being sent (the caller
 * retries the request through another proxy): it is asked only when nothing was sent yet.
 */
export function observeResponse(
  res: ServerResponse,
  hooks: {
    readonly extraHeaders: () => Readonly<Record<string, string>>;
    readonly hold: (status: number) => boolean;
    /**
     * Runs once the whole answer went by and before its end is sent: the lease is released here,
     * so that a client cannot send its next request (a sticky session's, say) before the broker
     * heard the release. Undefined returned: done already (a kept lease), the end goes out now.
     */
    readonly beforeEnd?: () => Promise<void> | undefined;
  },
): Observed {
  const seen: Observed = { status: 0, headers: {}, answered: false, own: false, body: new BodySample() };
  const writeHead = res.writeHead.bind(res) as (status: number, ...rest: unknown[]) => ServerResponse;
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;

  const addExtra = (): void => {
    if (res.headersSent) return;
    for (const [k, v] of Object.entries(hooks.extraHeaders())) res.setHeader(k, v);
  };
  const take = (chunk: unknown): void => {
    if (chunk === undefined || chunk === null || typeof chunk === "function") return;
    seen.body.add(typeof chunk === "string" ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  };

  res.writeHead = ((status: number, ...rest: unknown[]) => {
    seen.status = status;
    seen.answered = true;
    const raw = rest.find((r) => Array.isArray(r) || (typeof r === "object" && r !== null));
    seen.headers = headersOf(raw);
    addExtra();
    return writeHead(status, ...rest);
  }) as ServerResponse["writeHead"];
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    take(chunk);
    return write(chunk, ...rest);
  }) as ServerResponse["write"];
  res.end = ((...args: unknown[]) => {
    if (!seen.answered) {
      // an answer written without writeHead (the proxy server's own errors)
      seen.status = res.statusCode;
      seen.answered = true;
      seen.own = true;
      seen.headers = headersOf(res.getHeaders());
      if (!res.headersSent && hooks.hold(res.statusCode)) {
        seen.answered = false;
        for (const name of res.getHeaderNames()) res.removeHeader(name);
        res.statusCode = 200;
        const done = args.find((a) => typeof a === "function");
        if (typeof done === "function") (done as () => void)();
        return res;
      }
      addExtra();
    }
    if (typeof args[0] !== "function") take(args[0]);
    const before = hooks.beforeEnd?.();
    if (before === undefined) return end(...args);
    void before.catch(() => undefined).finally(() => end(...args));
    return res;
  }) as ServerResponse["end"];
  return seen;
}

/** Headers as a lowercase record: from `writeHead`'s raw array or object, or `getHeaders()`. */
function headersOf(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(raw)) {
    for (let i = 0; i + 1 < raw.length; i += 2) out[String(raw[i]).toLowerCase()] = String(raw[i + 1]);
    return out;
  }
  if (typeof raw === "object" && raw !== null) {
    for (const [k, v] of Object.entries(raw as OutgoingHttpHeaders)) {
      if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : String(v);
    }
  }
  return out;
}
