/**
 * One Redis command over a fresh socket (RESP), for the faults the harness injects: FLUSHALL,
 * SHUTDOWN NOSAVE. A client library would reconnect and retry on its own; a fault is sent once.
 */
import { createConnection } from "node:net";

/** Send `args` to 127.0.0.1:`port`; resolves with the first reply line, or "" when the server closed without one (SHUTDOWN). */
export function redisCommand(opts: {
  readonly port: number;
  readonly args: readonly string[];
  readonly timeoutMs?: number;
}): Promise<string> {
  const body = `*${opts.args.length}\r\n${opts.args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: "127.0.0.1", port: opts.port });
    let answer = "";
    let settled = false;
    const done = (err: Error | undefined, line: string): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      if (err !== undefined) reject(err);
      else resolve(line);
    };
    socket.setTimeout(opts.timeoutMs ?? 5_000, () => done(new Error(`redis ${opts.args.join(" ")}: no answer`), ""));
    socket.once("error", (err) => done(err, ""));
    socket.once("connect", () => socket.write(body));
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString("utf8");
      const end = answer.indexOf("\r\n");
      if (end < 0) return;
      const line = answer.slice(0, end);
      if (line.startsWith("-")) done(new Error(`redis ${opts.args.join(" ")}: ${line.slice(1)}`), "");
      else done(undefined, line);
    });
    socket.once("close", () => done(undefined, answer));
  });
}
