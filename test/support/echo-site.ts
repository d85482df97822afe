/**
 * Test helper: an "what is my IP" site on loopback. Every request, whatever its path, is answered
 * `{"ip":"<the connection's remote address>"}` (JSON), as the services a health check URL points
 * at do; through the provider simulator that address is the session's exit.
 */
import { createServer } from "node:http";
import type { Server } from "node:http";

export interface EchoSiteOptions {
  /** Listen address; default 127.0.0.1. */
  readonly host?: string;
}

export interface EchoSite {
  /** `http://<host>:<port>/ip` */
  readonly url: string;
  /** Requests answered so far. */
  requests(): number;
  close(): Promise<void>;
}

/** The remote address of a socket, IPv4-mapped addresses unwrapped. */
export function remoteIp(address: string | undefined): string {
  return (address ?? "").replace(/^::ffff:/, "");
}

export async function startEchoSite(options: EchoSiteOptions = {}): Promise<EchoSite> {
  const host = options.host ?? "127.0.0.1";
  let count = 0;
  const server: Server = createServer({ keepAlive: false }, (req, res) => {
    count += 1;
    const body = JSON.stringify({ ip: remoteIp(req.socket.remoteAddress) });
    res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) });
    res.end(body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, resolve);
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://${host}:${port}/ip`,
    requests: () => count,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
