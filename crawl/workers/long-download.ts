/**
 * The long-download check: through ProxyBroker, `/stream` URLs are downloaded inside
 * `client.withLease` with a short lease TTL (the stream lasts 3× the TTL; the SDK heartbeats every
 * ttl/3), while `/page/` URLs of the same site are fetched with `client.fetch` and wait for a
 * free proxy. A stream counts as accepted when it arrived complete and its lease was never lost.
 */
import { NoProxyAvailableError, ProxyBrokerClient } from "@proxybroker/sdk";
import { getViaProxy, runWorker } from "./common.js";
import type { Attempt } from "./common.js";

const MAX_WAIT_MS = 30_000;
const STREAM_END = "</pre></div></body></html>";

runWorker(async (config) => {
  const ttlMs = config.leaseTtlMs ?? 2_000;
  /** Wait inside the broker, but not past the end of the run. */
  const waitBudget = (): number => Math.max(1, Math.min(MAX_WAIT_MS, config.endAt - Date.now()));
  const client = new ProxyBrokerClient({ address: config.brokerAddress, workerId: config.workerId });
  const stream = (url: string): Promise<Attempt> =>
    client.withLease(
      url,
      async (lease) => {
        const r = await getViaProxy(lease.proxy.url.replace(/^https?:\/\//, ""), url, config.timeoutMs);
        const complete = r.status === 200 && r.body.endsWith(STREAM_END);
        return {
          kind: "fetched",
          proxy: lease.proxy.id,
          status: r.status,
          body: r.body,
          accepted: complete && !lease.signal.aborted,
        } as const;
      },
      { ttlMs, maxWaitMs: waitBudget(), heartbeat: config.heartbeat ?? true },
    );
  const page = async (url: string): Promise<Attempt> => {
    const r = await client.fetch(url, {
      ttlMs,
      maxWaitMs: waitBudget(),
      timeoutMs: config.timeoutMs,
      expectations: { markers: ["#content"] },
    });
    return {
      kind: "fetched",
      proxy: r.proxy.id,
      status: r.response.status,
      body: r.body.toString("utf8"),
      accepted: r.outcome.kind === "SUCCESS",
    };
  };
  const attempt = async (url: string): Promise<Attempt> => {
    try {
      return await (new URL(url).pathname === "/stream" ? stream(url) : page(url));
    } catch (err) {
      if (err instanceof NoProxyAvailableError) return { kind: "no-proxy" };
      return { kind: "fetched", proxy: "", status: 0, body: "", accepted: false };
    }
  };
  return { attempt, close: () => client.close() };
});
