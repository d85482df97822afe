/**
 * One GET through an HTTP proxy (absolute-URI form, no keep-alive) that stops the moment its
 * signal aborts: a worker whose lease is lost or expires must stop using the proxy at once.
 */
import { request } from "node:http";
import { CONTENT_MARKER } from "../../crawl/sites.js";

export interface ProxiedGet {
  /** `host:port` of the proxy. */
  readonly proxy: string;
  readonly url: string;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
}

export interface ProxiedAnswer {
  readonly status: number;
  /** The body carries the sites' content marker (a real page, not a 429 or an error page). */
  readonly page: boolean;
}

export function getThroughProxy(opts: ProxiedGet): Promise<ProxiedAnswer> {
  const [host = "", port = ""] = opts.proxy.split(":");
  return new Promise((resolve, reject) => {
    if (opts.signal.aborted) {
      reject(opts.signal.reason instanceof Error ? opts.signal.reason : new Error("aborted"));
      return;
    }
    const req = request(
      {
        host,
        port: Number(port),
        method: "GET",
        path: opts.url,
        agent: false,
        signal: opts.signal,
        headers: { host: new URL(opts.url).host, connection: "close" },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, page: Buffer.concat(chunks).toString("utf8").includes(CONTENT_MARKER) }),
        );
        res.on("error", reject);
        res.on("aborted", () => reject(new Error("response aborted")));
      },
    );
    req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`timeout after ${opts.timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}
