/**
 * A complete worker: crawls a few pages through leased proxies.
 *
 *   npm start                                   # in one terminal: the broker with the sample pool
 *   npm run example:worker                      # in another
 *
 * The sample pool's proxies are placeholders (nothing listens there), so the fetches fail and are
 * reported as PROXY_ERROR — watch the scores drop with `npx buf curl … ProxyAdmin/ListProxies`.
 * Point PROXIES_FILE at real proxies to crawl for real. BROKER_ADDRESS overrides the address.
 */
import { BrokerClientError, type LeaseLostError, NoProxyAvailableError, ProxyBrokerClient } from "@proxybroker/sdk";

const client = new ProxyBrokerClient({
  address: process.env["BROKER_ADDRESS"] ?? "127.0.0.1:50051",
  // workerId defaults to WORKER_ID or hostname-pid-starttime.
  fallback: { snapshotFile: ".tmp/pool-snapshot.json" },
});
// Typed events (see ClientEvents): where leases come from, lost leases, the fallback pool's readiness.
client.on("mode", (mode) => console.log(`mode: ${mode}`));
client.on("leaseLost", ({ leaseId, reason, source }) => console.log(`lease ${leaseId} (${source}) lost: ${reason}`));
client.on("fallbackReady", () => console.log(`fallback pool ready: ${client.fallback.share.length} proxies of its own`));

const pages = ["https://example.com/", "https://example.com/a", "https://example.org/", "http://example.net/x"];

for (const url of pages) {
  try {
    // 1. The fetch helper: lease, request through the proxy, classify, release.
    const { response, outcome, proxy, source } = await client.fetch(url, { maxWaitMs: 5_000, timeoutMs: 5_000 });
    console.log(`${url}: ${response.status} via ${proxy.id} (${source}) → ${outcome.kind}`);
  } catch (err) {
    if (err instanceof NoProxyAvailableError) console.log(`${url}: no proxy, retry in ${err.retryAfterMs} ms`);
    else if (err instanceof BrokerClientError) console.log(`${url}: ${err.name} (code ${err.code}): ${err.message}`);
    else
      console.log(
        `${url}: failed (${err instanceof Error ? err.message : String(err)}); the lease was released with the outcome it implies`,
      );
  }
}

// 2. withLease: your own HTTP client, heartbeats while it runs, released with the outcome.
try {
  const status = await client.withLease(
    "https://example.com/big-download",
    async (lease) => {
      console.log(`holding ${lease.proxy.url} for ${lease.domain}, token ${lease.fencingToken}`);
      // … use lease.proxy.url with any HTTP client; stop when lease.signal aborts …
      lease.signal.addEventListener("abort", () => console.log("lease lost:", (lease.signal.reason as LeaseLostError).reason));
      return { outcome: { kind: "SUCCESS" as const, httpStatus: 200 }, status: 200 };
    },
    { ttlMs: 30_000, maxWaitMs: 5_000 },
  );
  console.log(`withLease returned ${status.status}`);
} catch (err) {
  console.log(`withLease: ${err instanceof Error ? err.message : String(err)}`);
}

await client.close();
