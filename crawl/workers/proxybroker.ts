/**
 * Strategy "proxybroker": the SDK's `client.fetch` (lease through the broker, waiting inside it
 * up to `maxWaitMs`, fetch through the leased proxy, classify with the content marker, release with
 * the outcome). A page is accepted when the classifier says SUCCESS.
 */
import { NoProxyAvailableError, ProxyBrokerClient } from "@proxybroker/sdk";
import { runWorker } from "./common.js";
import type { Attempt } from "./common.js";

const MAX_WAIT_MS = 5_000;

runWorker(async (config) => {
  /** Wait inside the broker, but not past the end of the run. */
  const waitBudget = (): number => Math.max(1, Math.min(MAX_WAIT_MS, config.endAt - Date.now()));
  const client = new ProxyBrokerClient({ address: config.brokerAddress, workerId: config.workerId });
  if (process.env["CRAWL_DEBUG"] === "1") client.on("mode", (m) => process.stderr.write(`${Date.now()} ${config.workerId} mode ${m}\n`));
  const attempt = async (url: string): Promise<Attempt> => {
    try {
      const r = await client.fetch(url, { maxWaitMs: waitBudget(), timeoutMs: config.timeoutMs, expectations: { markers: ["#content"] } });
      return {
        kind: "fetched",
        proxy: r.proxy.id,
        status: r.response.status,
        body: r.body.toString("utf8"),
        accepted: r.outcome.kind === "SUCCESS",
        source: r.source,
      };
    } catch (err) {
      if (err instanceof NoProxyAvailableError) return { kind: "no-proxy" };
      return { kind: "fetched", proxy: "", status: 0, body: "", accepted: false };
    }
  };
  return { attempt, close: () => client.close() };
});
