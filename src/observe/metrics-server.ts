import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { Registry } from "prom-client";
import type { TokenTable } from "../security/tokens.js";
import type { StatusSnapshot } from "./status/snapshot.js";
import { statusAccess } from "./status-access.js";

/** The status page, read once (plain HTML and JavaScript: nothing to build). */
const PAGE = readFileSync(new URL("./status/page.html", import.meta.url), "utf8");

export interface MetricsServerAccess {
  /** The tokens in force (AUTH_TOKENS_FILE, read again on SIGHUP): the status page then needs an admin's. */
  readonly tokens?: () => TokenTable | undefined;
}

/**
 * Serve on host:port: `GET /metrics` (Prometheus text format, no token: it names no worker, domain
 * or URL), and with `status` the status page at `GET /` and its data at `GET /status.json`, for an
 * admin token when there are tokens (status-access.ts).
 */
export async function startMetricsServer(
  address: string,
  registry: Registry,
  status?: () => Promise<StatusSnapshot>,
  access: MetricsServerAccess = {},
): Promise<Server> {
  const sep = address.lastIndexOf(":");
  const host = address.slice(0, sep).replace(/^\[|\]$/g, "");
  const port = Number(address.slice(sep + 1));
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/metrics") {
      registry.metrics().then(
        (body) => res.writeHead(200, { "content-type": registry.contentType }).end(body),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
      return;
    }
    if (req.method === "GET" && status !== undefined && (path === "/" || path === "/status.json")) {
      const allowed = statusAccess(req, access.tokens?.());
      if (!allowed.ok) {
        res
          .writeHead(allowed.code, {
            "content-type": "text/plain",
            ...(allowed.code === 401 ? { "www-authenticate": 'Basic realm="proxybroker status", charset="UTF-8"' } : {}),
          })
          .end(`${allowed.reason}\n`);
        return;
      }
    }
    if (req.method === "GET" && status !== undefined && path === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(PAGE);
      return;
    }
    if (req.method === "GET" && status !== undefined && path === "/status.json") {
      status().then(
        (s) => res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(s)),
        (err: unknown) =>
          res
            .writeHead(503, { "content-type": "text/plain" })
            .end(`status unavailable: ${err instanceof Error ? err.message : String(err)}`),
      );
      return;
    }
    res.writeHead(404).end(`not found; try GET /metrics${status === undefined ? "" : " or GET / (the status page)"}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
