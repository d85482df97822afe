/**
 * proxy-chain alone, the gateway bench's reference: a proxy-chain `Server` whose
 * `prepareRequestFunction` hands each request to an upstream proxy (no lease, no broker; with
 * several, in turn). Run as its own process (like the gateway): `CHAIN_LISTEN=127.0.0.1:port
 * CHAIN_UPSTREAM=http://127.0.0.1:port[,http://…] node … bench/gateway-chain.ts`; prints
 * `chain listening on <address>` once it listens, stops on SIGTERM.
 *
 * Its upstream connections are made as the gateway makes them: one per request, never kept. With
 * Node's default agent (keep-alive) it reused sockets tinyproxy had just closed, and about 5 % of
 * its answers were 595 (connection reset): fast failures counted as throughput.
 */
import { Agent } from "node:http";
import { Server } from "proxy-chain";

const listen = process.env["CHAIN_LISTEN"] ?? "";
const upstreams = (process.env["CHAIN_UPSTREAM"] ?? "").split(",").filter((u) => u !== "");
const sep = listen.lastIndexOf(":");
if (sep < 0 || upstreams.length === 0) {
  process.stderr.write("gateway-chain: set CHAIN_LISTEN (host:port) and CHAIN_UPSTREAM (the upstream proxy URL)\n");
  process.exit(2);
}

let next = 0;
const httpAgent = new Agent({ keepAlive: false });
const server = new Server({
  host: listen.slice(0, sep),
  port: Number(listen.slice(sep + 1)),
  prepareRequestFunction: () => ({ upstreamProxyUrl: upstreams[next++ % upstreams.length] ?? null, httpAgent }),
});
await server.listen();
process.stdout.write(`chain listening on ${listen}\n`);
process.once("SIGTERM", () => {
  void server.close(true).finally(() => process.exit(0));
});
