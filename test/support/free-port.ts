import { createServer } from "node:net";

const SHARED_REDIS_PORT = 6379;

/** A loopback port that was free a moment ago (listen on 0, read it, close); never 6379. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const address = server.address();
        const p = typeof address === "object" && address !== null ? address.port : 0;
        server.close(() => resolve(p));
      });
    });
    if (port !== 0 && port !== SHARED_REDIS_PORT) return port;
  }
}
