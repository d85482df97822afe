/**
 * Test helper: make an SDK client able to lease for some hosts from its fallback pool. A worker
 * uses a domain-key in fallback only once the broker has listed it with that domain-key long
 * enough for every other worker to know (docs/spec.md §7): each host is leased once through the
 * broker, then this waits until the client's fallback pool is ready for every one of them.
 */
import { expect } from "vitest";
import { NoProxyAvailableError, type ProxyBrokerClient } from "@proxybroker/sdk";
import { hostFromDomain, hostFromUrl } from "@proxybroker/sdk/model";

/** The domain-key of a target (a URL or a host), without policies (tests set none that group hosts). */
function keyOf(target: string): string {
  return target.includes("://") ? hostFromUrl(target) : hostFromDomain(target);
}

/**
 * Lease each target once through the broker (a denial counts as well: the worker asked for it),
 * and wait until the client may use them in fallback.
 */
export async function fallbackReadyFor(client: ProxyBrokerClient, targets: readonly string[], timeoutMs = 5_000): Promise<void> {
  for (const t of targets) {
    try {
      const lease = await client.acquire(t);
      expect(lease.source).toBe("broker");
      await lease.release({ kind: "SUCCESS" });
    } catch (err) {
      if (!(err instanceof NoProxyAvailableError)) throw err;
    }
  }
  const keys = targets.map(keyOf);
  await expect.poll(() => keys.every((k) => client.fallback.readyDomains.includes(k)), { timeout: timeoutMs, interval: 25 }).toBe(true);
}
