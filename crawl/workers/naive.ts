/**
 * Strategy "naive": seed 000's single-machine middleware. Each worker rotates its own copy of the
 * proxy list (index from 0, +1 per request) and takes any 200 for the page.
 */
import { getViaProxy, runWorker } from "./common.js";
import type { Attempt } from "./common.js";

runWorker(async (config) => {
  const proxies = [...config.proxies];
  let index = 0;
  const attempt = async (url: string): Promise<Attempt> => {
    const proxy = proxies[index % proxies.length] ?? "";
    index += 1;
    try {
      const r = await getViaProxy(proxy, url, config.timeoutMs);
      return { kind: "fetched", proxy, status: r.status, body: r.body, accepted: r.status === 200 };
    } catch {
      return { kind: "fetched", proxy, status: 0, body: "", accepted: false };
    }
  };
  return { attempt };
});
