/**
 * A worker process for the Crawlee test: a real HttpCrawler whose proxies come from ProxyBroker
 * through @proxybroker/crawlee. Argument: a JSON config { broker, workerId, urls, concurrency }.
 * Prints one JSON line at the end: the URLs it took (with the content marker), the ones that failed.
 */
import { Configuration } from "@crawlee/core";
import { HttpCrawler } from "@crawlee/http";
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { ProxyBrokerCrawlee } from "@proxybroker/crawlee";

interface WorkerConfig {
  readonly broker: string;
  readonly workerId: string;
  readonly urls: readonly string[];
  readonly concurrency: number;
}

const config = JSON.parse(process.argv[process.argv.length - 1] ?? "{}") as WorkerConfig;
const client = new ProxyBrokerClient({ address: config.broker, workerId: config.workerId });
const pb = new ProxyBrokerCrawlee({ client, maxWaitMs: 20_000, expectations: { markers: ['<div id="content">'] } });
const taken: string[] = [];
const failed: string[] = [];
const crawler = new HttpCrawler(
  {
    proxyConfiguration: pb.proxyConfiguration,
    maxConcurrency: config.concurrency,
    maxRequestRetries: 5,
    requestHandlerTimeoutSecs: 30,
    postNavigationHooks: [pb.postNavigationHook],
    requestHandler: pb.requestHandler(async ({ request, body }) => {
      if (body.toString().includes('<div id="content">')) taken.push(request.url);
    }),
    errorHandler: pb.errorHandler(),
    failedRequestHandler: pb.failedRequestHandler(({ request }) => {
      failed.push(request.url);
    }),
  },
  new Configuration({ persistStorage: false, purgeOnStart: true }),
);
await crawler.run([...config.urls]);
await client.close();
process.stdout.write(`${JSON.stringify({ workerId: config.workerId, taken, failed, leasesLeft: pb.inFlight })}\n`);
