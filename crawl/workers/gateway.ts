/**
 * Strategy "gateway": a crawler that knows nothing of ProxyBroker — a plain HTTP GET with the
 * gateway as its proxy (the wait for a free proxy in a header), as curl or `requests` would send
 * it; in the HTTPS mode (CRAWL_HTTPS) an HTTPS GET through a kept-alive CONNECT tunnel per loop
 * (gateway-https.ts, the wait in the proxy username). A page is accepted when it carries the
 * site's content (the crawler's own check); a 503 from the gateway means no proxy was free
 * within the wait.
 */
import { readFile } from "node:fs/promises";
import { CONTENT_MARKER } from "../sites.js";
import { getViaProxy, runWorker } from "./common.js";
import type { Attempt, WorkerConfig } from "./common.js";
import { httpsGateway } from "./gateway-https.js";

const MAX_WAIT_MS = 5_000;

/** Plain HTTP: absolute-form GET, no keep-alive, the wait (capped at the window's end) in `X-ProxyBroker-Max-Wait`. */
function httpAttempt(config: WorkerConfig): (url: string) => Promise<Attempt> {
  const waitSeconds = (): string => (Math.max(1, Math.min(MAX_WAIT_MS, config.endAt - Date.now())) / 1_000).toFixed(3);
  return async (url) => {
    try {
      const r = await getViaProxy(config.gatewayAddress ?? "", url, config.timeoutMs + MAX_WAIT_MS, {
        "x-proxybroker-max-wait": waitSeconds(),
      });
      if (r.status === 503 && r.headers["x-proxybroker-proxy"] === undefined) return { kind: "no-proxy" };
      const source = r.headers["x-proxybroker-source"];
      return {
        kind: "fetched",
        proxy: typeof r.headers["x-proxybroker-proxy"] === "string" ? r.headers["x-proxybroker-proxy"] : "",
        status: r.status,
        body: r.body,
        accepted: r.status === 200 && r.body.includes(CONTENT_MARKER),
        ...(typeof source === "string" ? { source } : {}),
      };
    } catch {
      return { kind: "fetched", proxy: "", status: 0, body: "", accepted: false };
    }
  };
}

runWorker(async (config) => {
  if (config.https === undefined) return { attempt: httpAttempt(config) };
  return httpsGateway({
    gatewayAddress: config.gatewayAddress ?? "",
    caPem: (await readFile(config.https.caFile)).toString(),
    waitSeconds: MAX_WAIT_MS / 1_000,
    timeoutMs: config.timeoutMs + MAX_WAIT_MS,
    perRequest: config.https.connection === "per-request",
  });
});
