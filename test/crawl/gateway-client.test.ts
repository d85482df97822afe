/**
 * The crawl harness's gateway clients (CRAWL_GATEWAY_CLIENT, CRAWL_HTTPS_CONNECTIONS): read from
 * the environment, the command that starts a Python `requests` client, and the line that says
 * what ran.
 */
import { describe, expect, it } from "vitest";
import { describeGatewayClient, gatewayClientCommand, readGatewayClient, REQUESTS_WORKER } from "../../crawl/gateway-client.js";

describe("CRAWL_GATEWAY_CLIENT and CRAWL_HTTPS_CONNECTIONS", () => {
  it("default to Node clients with a kept-alive connection per loop", () => {
    expect(readGatewayClient({})).toEqual({ kind: "node", connections: "keep-alive" });
    expect(gatewayClientCommand(readGatewayClient({}))).toBeUndefined();
  });

  it("read the requests client and a connection per request", () => {
    const c = readGatewayClient({ CRAWL_GATEWAY_CLIENT: " requests ", CRAWL_HTTPS_CONNECTIONS: "per-request" });
    expect(c).toEqual({ kind: "requests", connections: "per-request" });
    expect(gatewayClientCommand(c)?.at(-1)).toBe(REQUESTS_WORKER);
    expect(describeGatewayClient(c, true)).toBe("gateway clients: Python requests, a new connection per request");
    expect(describeGatewayClient(c, false)).toBe("gateway clients: Python requests");
  });

  it("refuse what they do not know", () => {
    expect(() => readGatewayClient({ CRAWL_GATEWAY_CLIENT: "curl" })).toThrow(/node or requests/);
    expect(() => readGatewayClient({ CRAWL_HTTPS_CONNECTIONS: "close" })).toThrow(/keep-alive or per-request/);
  });
});
