/**
 * The targets of `npm run bench:gateway`, in the bench's own process: an HTTP site and a TCP echo
 * service, each listening on several loopback addresses (one port shared), so that every address
 * is a host of its own — a domain-key of its own for the broker, which ignores ports.
 *
 * The site answers `/page` at once (a 2 KiB page with `<div id="content">`) and `/big?bytes=N`
 * with N bytes, streamed in 64 KiB chunks at the pace the reader takes them.
 */
import { createServer as createHttpServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer as createTcpServer } from "node:net";
import type { Server, Socket } from "node:net";

export interface Listeners {
  /** The hosts (loopback addresses), each listening on `port`. */
  readonly hosts: readonly string[];
  readonly port: number;
  close(): Promise<void>;
}

const PAGE = Buffer.from(`<!doctype html><html><body><div id="content">${"<p>a fast page</p>".repeat(110)}</div></body></html>`);
const CHUNK = Buffer.alloc(64 * 1024, 120);

/** `count` loopback addresses 127.`net`.x.y (y from 1 to 250), none of them 127.0.0.x. */
export function loopbackHosts(net: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `127.${net}.${Math.floor(i / 250)}.${(i % 250) + 1}`);
}

function serve(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? "/", "http://site");
  if (url.pathname === "/page") {
    res.writeHead(200, { "content-type": "text/html", "content-length": PAGE.length }).end(PAGE);
    return;
  }
  if (url.pathname === "/big") {
    const total = Number(url.searchParams.get("bytes") ?? "0");
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": total });
    let sent = 0;
    const pump = (): void => {
      while (sent < total) {
        const n = Math.min(CHUNK.length, total - sent);
        sent += n;
        if (!res.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) {
          res.once("drain", pump);
          return;
        }
      }
      res.end();
    };
    pump();
    return;
  }
  res.writeHead(404).end();
}

async function listenAll(make: () => Server, hosts: readonly string[]): Promise<Listeners> {
  const servers: Server[] = [];
  let port = 0;
  for (const host of hosts) {
    const server = make();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address();
    if (port === 0 && typeof address === "object" && address !== null) port = address.port;
    servers.push(server);
  }
  return {
    hosts,
    port,
    close: async () => {
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              if ("closeAllConnections" in s && typeof s.closeAllConnections === "function") s.closeAllConnections();
            }),
        ),
      );
    },
  };
}

/** The HTTP site on each of `hosts`. */
export function startSite(hosts: readonly string[]): Promise<Listeners> {
  return listenAll(() => {
    const server = createHttpServer(serve);
    server.keepAliveTimeout = 5_000;
    return server;
  }, hosts);
}

/** A TCP echo service on each of `hosts` (what the CONNECT tunnels reach). */
export function startEcho(hosts: readonly string[]): Promise<Listeners> {
  const sockets = new Set<Socket>();
  return listenAll(
    () =>
      createTcpServer((socket) => {
        sockets.add(socket);
        socket.on("close", () => sockets.delete(socket));
        socket.on("error", () => socket.destroy());
        socket.pipe(socket);
      }),
    hosts,
  ).then((l) => ({
    ...l,
    close: async () => {
      for (const s of sockets) s.destroy();
      await l.close();
    },
  }));
}
