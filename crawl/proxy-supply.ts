/**
 * The proxies a crawl's strategies share: N tinyproxies, one client IP each; or, in the provider
 * scenario, a simulated provider's sessions over K exit IPs and the echo site that tells a session
 * its exit (the broker's health check URL there). `capacity` is how many distinct IPs the sites
 * can see — what the theoretical maximum counts.
 */
import { startEchoSite } from "../test/support/echo-site.js";
import type { EchoSite } from "../test/support/echo-site.js";
import { startProviderSim } from "../test/support/provider-sim.js";
import type { ProviderSim } from "../test/support/provider-sim.js";
import { startTinyproxies } from "../test/support/tinyproxies.js";
import type { ProviderScenario } from "./provider-options.js";

export interface ProxySupply {
  /** What the strategies get: `127.0.0.1:port`, or `user:password@127.0.0.1:port` (username sessions). */
  readonly proxies: readonly string[];
  /** Distinct client IPs behind `proxies`. */
  readonly capacity: number;
  /** The provider scenario's simulator and echo site. */
  readonly provider?: { readonly sim: ProviderSim; readonly echo: EchoSite };
  stop(): Promise<void>;
}

export interface ProxySupplyOptions {
  /** N tinyproxies (without a provider scenario). */
  readonly proxies: number;
  readonly provider: ProviderScenario | undefined;
}

export async function startProxySupply(options: ProxySupplyOptions): Promise<ProxySupply> {
  const { provider } = options;
  if (provider === undefined) {
    const tiny = await startTinyproxies({ count: options.proxies });
    return { proxies: tiny.proxies.map((p) => p.address), capacity: tiny.proxies.length, stop: () => tiny.stop() };
  }
  const sim = await startProviderSim({
    mode: provider.mode,
    sessions: provider.sessions,
    exits: provider.exits,
    assignment: provider.assignment,
  });
  const echo = await startEchoSite();
  return {
    proxies: sim.sessions.map((s) => s.url.replace(/^http:\/\//, "")),
    capacity: sim.exits.length,
    provider: { sim, echo },
    async stop() {
      await sim.close();
      await echo.close();
    },
  };
}
