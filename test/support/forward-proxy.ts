/**
 * Test helper: a small real HTTP forward proxy on loopback (absolute-URI requests and CONNECT
 * tunnels), or one that refuses everyone with 407.
 */
import { createServer, request } from "node:http";
import type { Server } from "node:http";
import { connect } from "node:net";

export interface ForwardProxy {
  readonly url: string;
  readonly requests: () => number;
  close(): Promise<void>;
}

/**
 * `deny`: refuse everyone (407). `hangUpOnTargetError`: when the site cannot be reached, close the
 * client's connection without an answer (as some proxies do) rather than answer 502.
 */
export async function startForwardProxy(opts: { deny?: boolean; hangUpOnTargetError?: boolean } = {}): Promise<ForwardProxy> {
  let count = 0;
  const server: Server = createServer((req, res) => {
    count++;
    if (opts.deny === true) {
      res.writeHead(407, { "proxy-authenticate": "Basic" }).end();
      return;
    }
    const target = new URL(req.url ?? "");
    const upstream = request(
      { host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on("error", () => (opts.hangUpOnTargetError === true ? res.socket?.destroy() : res.writeHead(502).end()));
    req.pipe(upstream);
  });
  server.on("connect", (req, socket, head) => {
    count++;
    if (opts.deny === true) {
      socket.end("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n");
      return;
    }
    const [host, port] = (req.url ?? "").split(":");
    let opened = false;
    const up = connect(Number(port), host ?? "127.0.0.1", () => {
      opened = true;
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    // a site it cannot reach: answered as real proxies answer it (tinyproxy, squid)
    up.on("error", () => (opened ? socket.destroy() : socket.end("HTTP/1.1 502 Bad Gateway\r\n\r\n")));
    socket.on("error", () => up.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const addr = server.address();
  const port = typeof addr === "object" && addr !== null ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => count,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
