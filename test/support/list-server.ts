/** A proxy-list server on loopback for source tests: its answer can be changed, its requests are seen. */
import { createServer } from "node:http";
import type { IncomingHttpHeaders } from "node:http";

export interface ListServer {
  readonly url: string;
  /** The answer from now on. */
  answer(status: number, body: string): void;
  /** The headers of every request so far. */
  readonly requests: IncomingHttpHeaders[];
  close(): Promise<void>;
}

export async function startListServer(): Promise<ListServer> {
  let status = 200;
  let body = "";
  const requests: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    requests.push(req.headers);
    res.writeHead(status, { "content-type": "text/plain" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  const port = typeof addr === "object" && addr !== null ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}/list`,
    answer(s, b) {
      status = s;
      body = b;
    },
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** `n` proxy lines 10.x.y.z:8080 from `from`. */
export function proxyLines(n: number, from = 0): string {
  const out: string[] = [];
  for (let i = from; i < from + n; i++) out.push(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:8080`);
  return `${out.join("\n")}\n`;
}
