/**
 * Chaos worker that knows nothing of ProxyBroker: every page is a plain GET with the run's
 * `proxybroker gateway` as its HTTP proxy (absolute-URI form, a fresh connection each, the wait in
 * `X-ProxyBroker-Max-Wait`), as curl or Python `requests` would send it. The gateway leases a
 * proxy per request, and names it in the answer (`x-proxybroker-proxy`, `x-proxybroker-source`):
 * that is logged as the request's lease (grant when it was sent, end when it was answered; no
 * token — the gateway holds the lease). The sites' log judges these requests like any other.
 */
import { request } from "node:http";
import { CONTENT_MARKER } from "../../crawl/sites.js";
import { readConfig } from "./config.js";
import { FailureCounts } from "./failures.js";
import { LeaseLog } from "./lease-log.js";
import { domainOf, planLease, runLoops, runWorkerProcess, sleep } from "./loop.js";

interface GatewayAnswer {
  readonly status: number;
  readonly page: boolean;
  readonly proxy: string;
  readonly source: string;
}

function getThroughGateway(opts: {
  readonly gateway: string;
  readonly url: string;
  readonly maxWaitMs: number;
  readonly timeoutMs: number;
}) {
  const [host = "", port = ""] = opts.gateway.split(":");
  return new Promise<GatewayAnswer>((resolve, reject) => {
    const req = request(
      {
        host,
        port: Number(port),
        method: "GET",
        path: opts.url,
        agent: false,
        headers: { host: new URL(opts.url).host, connection: "close", "x-proxybroker-max-wait": String(opts.maxWaitMs) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            page: Buffer.concat(chunks).toString("utf8").includes(CONTENT_MARKER),
            proxy: String(res.headers["x-proxybroker-proxy"] ?? ""),
            source: String(res.headers["x-proxybroker-source"] ?? ""),
          }),
        );
        res.on("error", reject);
        res.on("aborted", () => reject(new Error("response aborted")));
      },
    );
    req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`timeout after ${opts.timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

runWorkerProcess("chaos gateway worker", async () => {
  const config = readConfig();
  const gateway = config.gateway;
  if (gateway === undefined) throw new Error("chaos gateway worker: no gateway address in the configuration");
  const log = new LeaseLog(config.logFile, { worker: config.workerId, gen: config.gen });
  const failures = new FailureCounts();
  let n = 0;
  try {
    await runLoops({
      config,
      grants: () => log.grants,
      failures,
      oneLease: async (random) => {
        const plan = planLease(config, random);
        for (const url of plan.urls) {
          const sentAt = Date.now();
          try {
            const answer = await getThroughGateway({ gateway, url, maxWaitMs: config.maxWaitMs, timeoutMs: config.requestTimeoutMs });
            if (answer.proxy === "") {
              // no lease: the gateway waited in vain (503/504) or could not reach the broker
              failures.add(`gateway ${answer.status}`);
              await sleep(50);
              return;
            }
            n += 1;
            const lease = `g${n}`;
            const source = answer.source === "fallback" ? "fallback" : "broker";
            log.grant({
              kind: "gateway",
              api: "proxy",
              lease,
              proxy: answer.proxy,
              domain: domainOf(plan.site),
              token: "",
              source,
              at: sentAt,
            });
            const answeredAt = Date.now();
            log.end({
              lease,
              finalLease: lease,
              finalToken: "",
              finalSource: source,
              at: answeredAt,
              releasedAt: answeredAt,
              how: "released",
              requests: 1,
              pages: answer.page ? 1 : 0,
            });
          } catch (err) {
            // the gateway is down (a fault) or the request failed: the next one tries again
            const kind = err instanceof Error && "code" in err ? String(err.code) : "request failed";
            if (failures.toJSON()[kind] === undefined) process.stderr.write(`${new Date().toISOString()} ${url}: ${String(err)}\n`);
            failures.add(kind);
            await sleep(100);
            return;
          }
        }
      },
    });
  } finally {
    log.close();
  }
});
