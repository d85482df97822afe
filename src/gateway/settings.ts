import { isIP } from "node:net";
import type { CredentialsMode } from "./credentials.js";
import { splitHostPort } from "./address.js";
import { connectPortsOf, denyTargetsOf, type ConnectPorts } from "./targets.js";
import { UNKNOWN_INTERVAL_MS } from "./tunnels.js";

/**
 * The gateway's settings: each an environment variable with a flag of `proxybroker gateway`
 * (the flag wins). docs/settings.md lists them.
 */
export interface GatewaySettings {
  readonly host: string;
  readonly port: number;
  /** A gRPC target for the SDK (several brokers: `ipv4:a:1,b:2`). */
  readonly brokerTarget: string;
  /** Every broker address given (refused as targets). */
  readonly brokerAddresses: readonly string[];
  readonly brokerToken: string | undefined;
  readonly pool: string;
  readonly workerId: string;
  readonly tokensFile: string | undefined;
  readonly denyTargets: readonly string[];
  readonly waitMs: number;
  readonly maxWaitMs: number;
  readonly tunnelIdleMs: number;
  readonly tunnelMaxLifeMs: number;
  /** A tunnel's lease on a pair the broker does not pace is released this long after the tunnel closed (0: at once). */
  readonly tunnelUnknownIntervalMs: number;
  readonly maxConnections: number;
  readonly requestTimeoutMs: number;
  readonly upstreamTimeoutMs: number;
  /** Interception: the CA that signs the hosts' certificates (both set, or neither). */
  readonly caCertFile: string | undefined;
  readonly caKeyFile: string | undefined;
  /** More CAs to trust for the sites (interception). */
  readonly upstreamCaFile: string | undefined;
  /** `host:port` of GET /metrics; undefined: none. */
  readonly metricsAddress: string | undefined;
  /** On SIGTERM/SIGINT: how long requests in flight get to finish before every connection is closed. */
  readonly shutdownGraceMs: number;
  /** How long a broker connection may answer nothing before it counts as an outage (the SDK's `fallback.silentAfterMs`). */
  readonly silentAfterMs: number;
  /** "required": a request without proxy credentials gets a 407 challenge (browsers then send theirs). */
  readonly credentials: CredentialsMode;
  /** The ports a CONNECT may reach (GATEWAY_CONNECT_PORTS; 443 by default). */
  readonly connectPorts: ConnectPorts;
  /** Pools served at once (GATEWAY_MAX_POOLS), and how long a pool's client may be idle (GATEWAY_POOL_IDLE_MS). */
  readonly maxPools: number;
  readonly poolIdleMs: number;
  /**
   * Kept leases: a reusable lease (its pair unpaced) is kept idle this long at most for the next
   * request of its host (GATEWAY_KEEP_IDLE_MS; 0: never kept), and this long after it was first
   * kept at most (GATEWAY_KEEP_MAX_MS).
   */
  readonly keepIdleMs: number;
  readonly keepMaxMs: number;
}

/** What the flags and variables say, as strings (undefined: not given). */
export interface GatewayInput {
  readonly listen?: string | undefined;
  readonly address?: string | undefined;
  readonly token?: string | undefined;
  readonly pool?: string | undefined;
  readonly workerId?: string | undefined;
  readonly tokensFile?: string | undefined;
  readonly denyTargets?: string | undefined;
  readonly waitMs?: string | undefined;
  readonly maxWaitMs?: string | undefined;
  readonly tunnelIdleMs?: string | undefined;
  readonly tunnelMaxLifeMs?: string | undefined;
  readonly tunnelUnknownIntervalMs?: string | undefined;
  readonly maxConnections?: string | undefined;
  readonly requestTimeoutMs?: string | undefined;
  readonly upstreamTimeoutMs?: string | undefined;
  readonly caCertFile?: string | undefined;
  readonly caKeyFile?: string | undefined;
  readonly upstreamCaFile?: string | undefined;
  readonly metricsAddress?: string | undefined;
  readonly shutdownGraceMs?: string | undefined;
  readonly silentAfterMs?: string | undefined;
  readonly credentials?: string | undefined;
  readonly connectPorts?: string | undefined;
  readonly maxPools?: string | undefined;
  readonly poolIdleMs?: string | undefined;
  readonly denyPrivate?: string | undefined;
  readonly keepIdleMs?: string | undefined;
  readonly keepMaxMs?: string | undefined;
}

/** The environment variable of each input. */
export const GATEWAY_ENV: Readonly<Record<keyof GatewayInput, string>> = {
  listen: "GATEWAY_LISTEN_ADDRESS",
  address: "PROXYBROKER_ADDRESS",
  token: "PROXYBROKER_TOKEN",
  pool: "GATEWAY_POOL",
  workerId: "GATEWAY_WORKER_ID",
  tokensFile: "GATEWAY_TOKENS_FILE",
  denyTargets: "GATEWAY_DENY_TARGETS",
  waitMs: "GATEWAY_WAIT_MS",
  maxWaitMs: "GATEWAY_MAX_WAIT_MS",
  tunnelIdleMs: "GATEWAY_TUNNEL_IDLE_MS",
  tunnelMaxLifeMs: "GATEWAY_TUNNEL_MAX_LIFE_MS",
  tunnelUnknownIntervalMs: "GATEWAY_TUNNEL_UNKNOWN_INTERVAL_MS",
  maxConnections: "GATEWAY_MAX_CONNECTIONS",
  requestTimeoutMs: "GATEWAY_REQUEST_TIMEOUT_MS",
  upstreamTimeoutMs: "GATEWAY_UPSTREAM_TIMEOUT_MS",
  caCertFile: "GATEWAY_CA_CERT_FILE",
  caKeyFile: "GATEWAY_CA_KEY_FILE",
  upstreamCaFile: "GATEWAY_UPSTREAM_CA_FILE",
  metricsAddress: "GATEWAY_METRICS_ADDRESS",
  shutdownGraceMs: "GATEWAY_SHUTDOWN_GRACE_MS",
  silentAfterMs: "GATEWAY_SILENT_AFTER_MS",
  credentials: "GATEWAY_CREDENTIALS",
  connectPorts: "GATEWAY_CONNECT_PORTS",
  maxPools: "GATEWAY_MAX_POOLS",
  poolIdleMs: "GATEWAY_POOL_IDLE_MS",
  denyPrivate: "GATEWAY_DENY_PRIVATE",
  keepIdleMs: "GATEWAY_KEEP_IDLE_MS",
  keepMaxMs: "GATEWAY_KEEP_MAX_MS",
};

/** A setting that cannot be used; the message names it. */
export class GatewaySettingsError extends Error {
  override readonly name = "GatewaySettingsError";
}

/** Resolve the settings (flags over variables over defaults); throws `GatewaySettingsError`. */
export function gatewaySettings(input: GatewayInput, defaultWorkerId: string): GatewaySettings {
  const [host, port] = hostPort(input.listen ?? "127.0.0.1:8899", "GATEWAY_LISTEN_ADDRESS");
  // a gRPC target as the SDK takes it (`ipv4:a,b`, `dns:host:port`) is used as it is
  const given = input.address ?? "127.0.0.1:50051";
  const scheme = /^(ipv4|ipv6|dns):(?:\/\/\/?)?/.exec(given);
  const brokers = (scheme === null ? given : given.slice(scheme[0].length))
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (brokers.length === 0) throw new GatewaySettingsError("PROXYBROKER_ADDRESS: no broker address");
  const tokensFile = input.tokensFile === undefined || input.tokensFile === "" ? undefined : input.tokensFile;
  if (!isLoopback(host) && tokensFile === undefined) {
    throw new GatewaySettingsError(
      `GATEWAY_LISTEN_ADDRESS ${host} is not loopback: a gateway on a real address needs GATEWAY_TOKENS_FILE (clients authenticate), or it would be an open proxy`,
    );
  }
  const caCertFile = fileOf(input.caCertFile);
  const caKeyFile = fileOf(input.caKeyFile);
  if ((caCertFile === undefined) !== (caKeyFile === undefined)) {
    throw new GatewaySettingsError("GATEWAY_CA_CERT_FILE and GATEWAY_CA_KEY_FILE: interception needs both (or neither: tunnel mode)");
  }
  const waitMs = ms(input.waitMs, 10_000, "GATEWAY_WAIT_MS");
  const maxWaitMs = ms(input.maxWaitMs, 60_000, "GATEWAY_MAX_WAIT_MS");
  return {
    host,
    port,
    brokerTarget: scheme !== null ? given : brokers.length === 1 ? (brokers[0] ?? "") : `ipv4:${brokers.join(",")}`,
    brokerAddresses: brokers,
    brokerToken: input.token === "" ? undefined : input.token,
    pool: input.pool ?? "default",
    workerId: input.workerId ?? defaultWorkerId,
    tokensFile,
    denyTargets: denyTargetsOf(input.denyTargets, flag(input.denyPrivate, "GATEWAY_DENY_PRIVATE")),
    waitMs: Math.min(waitMs, maxWaitMs),
    maxWaitMs,
    tunnelIdleMs: ms(input.tunnelIdleMs, 60_000, "GATEWAY_TUNNEL_IDLE_MS", 1),
    tunnelMaxLifeMs: ms(input.tunnelMaxLifeMs, 600_000, "GATEWAY_TUNNEL_MAX_LIFE_MS", 1),
    tunnelUnknownIntervalMs: ms(input.tunnelUnknownIntervalMs, UNKNOWN_INTERVAL_MS, "GATEWAY_TUNNEL_UNKNOWN_INTERVAL_MS"),
    maxConnections: ms(input.maxConnections, 1_024, "GATEWAY_MAX_CONNECTIONS", 1),
    requestTimeoutMs: ms(input.requestTimeoutMs, 300_000, "GATEWAY_REQUEST_TIMEOUT_MS", 1),
    upstreamTimeoutMs: ms(input.upstreamTimeoutMs, 60_000, "GATEWAY_UPSTREAM_TIMEOUT_MS", 1),
    caCertFile,
    caKeyFile,
    upstreamCaFile: fileOf(input.upstreamCaFile),
    metricsAddress:
      input.metricsAddress === undefined || input.metricsAddress === ""
        ? undefined
        : hostPort(input.metricsAddress, "GATEWAY_METRICS_ADDRESS").join(":"),
    shutdownGraceMs: ms(input.shutdownGraceMs, 10_000, "GATEWAY_SHUTDOWN_GRACE_MS"),
    silentAfterMs: silentAfter(input.silentAfterMs),
    credentials: credentialsMode(input.credentials, tokensFile !== undefined),
    connectPorts: checked(() => connectPortsOf(input.connectPorts)),
    maxPools: ms(input.maxPools, 64, "GATEWAY_MAX_POOLS", 1),
    poolIdleMs: ms(input.poolIdleMs, 300_000, "GATEWAY_POOL_IDLE_MS", 1_000),
    keepIdleMs: ms(input.keepIdleMs, 250, "GATEWAY_KEEP_IDLE_MS"),
    keepMaxMs: ms(input.keepMaxMs, 5_000, "GATEWAY_KEEP_MAX_MS", 1),
  };
}

/** A setting's own error as a `GatewaySettingsError`. */
function checked<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw new GatewaySettingsError(err instanceof Error ? err.message : String(err));
  }
}

/** A yes/no setting: 1, true, yes (or 0, false, no; unset: no). */
function flag(raw: string | undefined, name: string): boolean {
  if (raw === undefined || raw === "") return false;
  const v = raw.trim().toLowerCase();
  if (["1", "true", "yes"].includes(v)) return true;
  if (["0", "false", "no"].includes(v)) return false;
  throw new GatewaySettingsError(`${name}: 1 or 0, got "${raw}"`);
}

/** GATEWAY_CREDENTIALS: `optional` (default) or `required`; with client tokens always `required`. */
function credentialsMode(raw: string | undefined, tokens: boolean): CredentialsMode {
  if (raw === undefined || raw === "") return tokens ? "required" : "optional";
  if (raw !== "optional" && raw !== "required") throw new GatewaySettingsError(`GATEWAY_CREDENTIALS: optional or required, got "${raw}"`);
  if (raw === "optional" && tokens)
    throw new GatewaySettingsError("GATEWAY_CREDENTIALS=optional: with GATEWAY_TOKENS_FILE, credentials are required");
  return raw;
}

/** GATEWAY_SILENT_AFTER_MS: in [1000, 3000], as the SDK allows. */
function silentAfter(raw: string | undefined): number {
  const v = ms(raw, 3_000, "GATEWAY_SILENT_AFTER_MS", 1_000);
  if (v > 3_000) throw new GatewaySettingsError(`GATEWAY_SILENT_AFTER_MS: at most 3000, got "${String(raw)}"`);
  return v;
}

function fileOf(raw: string | undefined): string | undefined {
  return raw === undefined || raw === "" ? undefined : raw;
}

/** Loopback: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  if (host === "localhost" || host === "::1") return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

function hostPort(address: string, name: string): [string, number] {
  const hp = splitHostPort(address);
  if (hp === undefined) throw new GatewaySettingsError(`${name}: expected host:port, got "${address}"`);
  return hp;
}

function ms(raw: string | undefined, fallback: number, name: string, min = 0): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new GatewaySettingsError(`${name}: expected an integer ≥ ${min}, got "${raw}"`);
  return n;
}
