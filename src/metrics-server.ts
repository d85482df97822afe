import { createServer } from "node:http";
import type { Server } from "node:http";
import type { Registry } from "prom-client";

/** Serve `GET /metrics` (Prometheus text format) on host:port. */
export async function startMetricsServer(address: string, registry: Registry): Promise<Server> {
  const sep = address.lastIndexOf(":");
  const host = address.slice(0, sep).replace(/^\[|\]$/g, "");
  const port = Number(address.slice(sep + 1));
  const server = createServer((req, res) => {
    if (req.method !== "GET" || req.url !== "/metrics") {
      res.writeHead(404).end("not found; try GET /metrics\n");
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { "content-type": registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
