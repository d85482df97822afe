/**
 * Which client the gateway's workers are (CRAWL_GATEWAY_CLIENT) and, over HTTPS, how they use
 * their connections (CRAWL_HTTPS_CONNECTIONS). `node` (default): workers/gateway.ts, undici over
 * HTTPS; `requests`: Python `requests` in threads (`crawl/python/crawl_worker/requests_worker.py`,
 * Debian's python3-requests and python3-redis), one thread per loop. `keep-alive` (default): one
 * kept-alive connection per loop, so in tunnel mode one tunnel and one lease for every request of
 * the loop; `per-request`: a new connection for every request, closed once its answer was read, so
 * one CONNECT and, in tunnel mode, one lease per request.
 */
import { spawnSync } from "node:child_process";
import { PYTHON } from "./python-workers.js";

export type GatewayClientKind = "node" | "requests";
export type HttpsConnections = "keep-alive" | "per-request";

export interface GatewayClient {
  readonly kind: GatewayClientKind;
  readonly connections: HttpsConnections;
}

export const REQUESTS_WORKER = "crawl/python/crawl_worker/requests_worker.py";
const REQUESTS_MODULES = ["requests", "redis"];

function choice<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[]): T {
  const raw = (env[name] ?? "").trim();
  if (raw === "") return values[0] as T;
  const found = values.find((v) => v === raw);
  if (found === undefined) throw new Error(`${name} must be ${values.join(" or ")} (or unset: ${values[0]}), got "${raw}"`);
  return found;
}

/** CRAWL_GATEWAY_CLIENT and CRAWL_HTTPS_CONNECTIONS. */
export function readGatewayClient(env: NodeJS.ProcessEnv = process.env): GatewayClient {
  return {
    kind: choice<GatewayClientKind>(env, "CRAWL_GATEWAY_CLIENT", ["node", "requests"]),
    connections: choice<HttpsConnections>(env, "CRAWL_HTTPS_CONNECTIONS", ["keep-alive", "per-request"]),
  };
}

/** argv before the config JSON for `runWorkers({ command })`; undefined: the TypeScript entry. */
export function gatewayClientCommand(client: GatewayClient): readonly string[] | undefined {
  return client.kind === "requests" ? [PYTHON, REQUESTS_WORKER] : undefined;
}

/** The label of the gateway clients' worker group. */
export function gatewayClientLabel(client: GatewayClient): string {
  return client.kind === "requests" ? "Python requests" : "TypeScript";
}

/** "gateway clients: Python requests, a new connection per request" (HTTPS), or the client alone. */
export function describeGatewayClient(client: GatewayClient, https: boolean): string {
  const who = client.kind === "requests" ? "Python requests" : "Node (undici)";
  if (!https) return `gateway clients: ${who}`;
  const how = client.connections === "per-request" ? "a new connection per request" : "a kept-alive connection per loop";
  return `gateway clients: ${who}, ${how}`;
}

/** Throws when the `requests` client's interpreter lacks its modules. */
export function checkGatewayClient(client: GatewayClient): void {
  if (client.kind !== "requests") return;
  const r = spawnSync(PYTHON, ["-c", `import ${REQUESTS_MODULES.join(", ")}`], { encoding: "utf8" });
  if (r.error !== undefined || r.status !== 0) {
    const why = r.error?.message ?? r.stderr.trim().split("\n").at(-1) ?? `exit ${String(r.status)}`;
    throw new Error(
      `CRAWL_GATEWAY_CLIENT=requests needs ${PYTHON} with requests and redis (apt-get install -y python3-requests python3-redis): ${why}`,
    );
  }
}
