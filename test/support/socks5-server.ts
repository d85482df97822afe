/**
 * Test helper: a SOCKS5 proxy on loopback (RFC 1928, CONNECT only; RFC 1929 username and password
 * when given), enough to stand for a socks5 upstream proxy. It records the destinations it was
 * asked for.
 */
import { connect, createServer } from "node:net";
import type { AddressInfo, Server, Socket } from "node:net";

export interface Socks5Server {
  /** `127.0.0.1:port`. */
  readonly address: string;
  /** `host:port` of each CONNECT, in order. */
  readonly connects: readonly string[];
  close(): Promise<void>;
}

/** Read exactly `n` bytes from a paused socket. */
function read(socket: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tryRead = (): void => {
      const chunk: Buffer | null = socket.read(n);
      if (chunk === null) return;
      socket.off("readable", tryRead);
      socket.off("close", closed);
      resolve(chunk);
    };
    const closed = (): void => reject(new Error("socks client went away"));
    socket.on("readable", tryRead);
    socket.once("close", closed);
    tryRead();
  });
}

async function serve(socket: Socket, auth: { user: string; pass: string } | undefined, connects: string[]): Promise<void> {
  const [version = 0, methods = 0] = await read(socket, 2);
  if (version !== 5) throw new Error("not socks5");
  const offered = await read(socket, methods);
  const method = auth === undefined ? 0x00 : 0x02;
  if (!offered.includes(method)) {
    socket.end(Buffer.from([5, 0xff]));
    return;
  }
  socket.write(Buffer.from([5, method]));
  if (auth !== undefined) {
    const [, ulen = 0] = await read(socket, 2);
    const user = (await read(socket, ulen)).toString();
    const [plen = 0] = await read(socket, 1);
    const pass = (await read(socket, plen)).toString();
    const ok = user === auth.user && pass === auth.pass;
    socket.write(Buffer.from([1, ok ? 0 : 1]));
    if (!ok) {
      socket.end();
      return;
    }
  }
  const [, cmd = 0, , atyp = 0] = await read(socket, 4);
  let host: string;
  if (atyp === 1) host = [...(await read(socket, 4))].join(".");
  else if (atyp === 3) host = (await read(socket, (await read(socket, 1))[0] ?? 0)).toString();
  else host = ((await read(socket, 16)).toString("hex").match(/.{4}/g) ?? []).join(":");
  const port = (await read(socket, 2)).readUInt16BE(0);
  const reply = (code: number): Buffer => Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
  if (cmd !== 1) {
    socket.end(reply(7));
    return;
  }
  connects.push(`${host}:${port}`);
  const out = connect({ host, port }, () => {
    socket.write(reply(0));
    socket.pipe(out).pipe(socket);
    socket.resume();
  });
  out.on("error", () => socket.destroy());
  socket.on("error", () => out.destroy());
  socket.on("close", () => out.destroy());
}

export async function startSocks5Server(auth?: { user: string; pass: string }): Promise<Socks5Server> {
  const connects: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer({ pauseOnConnect: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    serve(socket, auth, connects).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    connects,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
