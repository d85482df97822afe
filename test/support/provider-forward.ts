/**
 * The provider simulator's forwarding: a real HTTP forward proxy server (absolute-form requests
 * and CONNECT tunnels) whose upstream connections leave from the exit address its `admit`
 * callback picks for the request (`localAddress`), so the target sees that address as the client.
 * A refused request gets 407 with a Basic challenge.
 */
import { createServer, request } from "node:http";
import type { IncomingMessage, Server } from "node:http";
import { connect } from "node:net";
import type { Socket } from "node:net";

/** What the simulator decided for one request: the exit to leave from, or a refusal (407). */
export type Admission = { readonly exit: string } | { readonly refused: string };

export interface ForwardingOptions {
  /** The exit of a request (from its Proxy-Authorization, or the port it came to), or why not. */
  readonly admit: (req: IncomingMessage) => Admission;
  /** Told of each request or tunnel forwarded, with its exit. */
  readonly onForward?: (exit: string) => void;
}

export interface ForwardingServer {
  readonly server: Server;
  /** Close the server, every client connection and every tunnel. */
  close(): Promise<void>;
}

export const REALM = "provider-sim";
const HOP_BY_HOP = ["proxy-authorization", "proxy-connection"];

function refusal(reason: string): string {
  return `HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="${REALM}"\r\nX-Refused: ${reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;
}

/** `host:port` of a CONNECT request; undefined when malformed. */
function connectTarget(raw: string): { host: string; port: number } | undefined {
  const i = raw.lastIndexOf(":");
  const port = Number(raw.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port <= 0) return undefined;
  return { host: raw.slice(0, i).replace(/^\[|\]$/g, ""), port };
}

export function createForwardingServer(options: ForwardingOptions): ForwardingServer {
  const tunnels = new Set<Socket>();
  const server = createServer((req, res) => {
    const admission = options.admit(req);
    if ("refused" in admission) {
      res.writeHead(407, { "proxy-authenticate": `Basic realm="${REALM}"`, "x-refused": admission.refused, connection: "close" }).end();
      return;
    }
    let target: URL;
    try {
      target = new URL(req.url ?? "");
    } catch {
      res.writeHead(400, { connection: "close" }).end();
      return;
    }
    const headers = { ...req.headers };
    for (const h of HOP_BY_HOP) delete headers[h];
    options.onForward?.(admission.exit);
    const upstream = request(
      {
        host: target.hostname.replace(/^\[|\]$/g, ""),
        port: target.port === "" ? 80 : Number(target.port),
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers,
        localAddress: admission.exit,
        agent: false,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on("error", () => (res.headersSent ? res.destroy() : res.writeHead(502, { connection: "close" }).end()));
    req.pipe(upstream);
  });
  server.on("connect", (req: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    const admission = options.admit(req);
    if ("refused" in admission) {
      socket.end(refusal(admission.refused));
      return;
    }
    const target = connectTarget(req.url ?? "");
    if (target === undefined) {
      socket.end("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    options.onForward?.(admission.exit);
    tunnels.add(socket);
    let opened = false;
    const up = connect({ host: target.host, port: target.port, localAddress: admission.exit }, () => {
      opened = true;
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    tunnels.add(up);
    up.on("error", () => (opened ? socket.destroy() : socket.end("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")));
    up.on("close", () => {
      tunnels.delete(up);
      socket.end();
    });
    socket.on("close", () => {
      tunnels.delete(socket);
      up.destroy();
    });
  });
  return {
    server,
    close: () =>
      new Promise((resolve) => {
        for (const s of tunnels) s.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Listen on `host` (a free port) and resolve with the port. */
export async function listenOn(server: Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => {
      const a = server.address();
      resolve(typeof a === "object" && a !== null ? a.port : 0);
    });
  });
}
