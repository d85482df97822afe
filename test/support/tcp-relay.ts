/**
 * Test helper: a TCP relay on loopback in front of a server, that can cut the network silently —
 * bytes are dropped in both directions, no connection is reset or closed, new connections are
 * accepted and never answered — as a real partition (a dead switch, a blackholing firewall) does.
 */
import { createServer, connect } from "node:net";
import type { Server, Socket } from "node:net";

export interface TcpRelay {
  /** `127.0.0.1:<port>` */
  readonly address: string;
  /** Drop every byte from now on, keeping every connection open. */
  cut(): void;
  /** Drop only what the server sends (its answers), forwarding what clients send. */
  muteServer(): void;
  /** Forward again (connections opened meanwhile start forwarding too). */
  heal(): void;
  /** Close every connection now (a reset, as when the server process dies); new ones are accepted. */
  reset(): void;
  close(): Promise<void>;
}

/** A relay to `target` (`host:port`). */
export async function startTcpRelay(target: string): Promise<TcpRelay> {
  const [host, port] = splitHostPort(target);
  let cut = false;
  let muted = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect({ host, port });
    sockets.add(client).add(upstream);
    const forward = (from: Socket, to: Socket, fromServer: boolean) =>
      from.on("data", (chunk: Buffer) => {
        if (!cut && !(fromServer && muted)) to.write(chunk);
      });
    forward(client, upstream, false);
    forward(upstream, client, true);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    // While cut, a closed side stays unnoticed by the other, as on a partitioned network.
    client.on("close", () => (cut ? upstream.destroy() : end()));
    upstream.on("close", () => (cut ? undefined : end()));
    client.on("error", () => undefined);
    upstream.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("relay has no TCP address");
  return {
    address: `127.0.0.1:${address.port}`,
    cut: () => {
      cut = true;
    },
    muteServer: () => {
      muted = true;
    },
    heal: () => {
      cut = false;
      muted = false;
    },
    reset: () => {
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function splitHostPort(target: string): [string, number] {
  const i = target.lastIndexOf(":");
  const port = Number(target.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port)) throw new Error(`relay target must be host:port, got ${target}`);
  return [target.slice(0, i), port];
}
