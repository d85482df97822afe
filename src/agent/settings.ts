import { isLoopback } from "../gateway/settings.js";

/**
 * `proxybroker agent`'s settings: environment variables, each also a flag (the flag wins).
 * Throws `AgentSettingsError` with a message that names the setting.
 */
export interface AgentInput {
  readonly listen?: string | undefined;
  readonly address?: string | undefined;
  readonly pool?: string | undefined;
  readonly workerId?: string | undefined;
  readonly token?: string | undefined;
  readonly tokensFile?: string | undefined;
  readonly leaseTtlMs?: string | undefined;
  readonly silentAfterMs?: string | undefined;
  readonly snapshotFile?: string | undefined;
}

export const AGENT_ENV: Readonly<Record<keyof AgentInput, string>> = {
  listen: "AGENT_LISTEN_ADDRESS",
  address: "PROXYBROKER_ADDRESS",
  pool: "AGENT_POOL",
  workerId: "AGENT_WORKER_ID",
  token: "PROXYBROKER_TOKEN",
  tokensFile: "AGENT_TOKENS_FILE",
  leaseTtlMs: "AGENT_LEASE_TTL_MS",
  silentAfterMs: "AGENT_SILENT_AFTER_MS",
  snapshotFile: "AGENT_SNAPSHOT_FILE",
};

export interface AgentSettings {
  /** A gRPC bind address: host:port, or unix:/path. */
  readonly listen: string;
  readonly brokerTarget: string;
  readonly brokerToken: string | undefined;
  readonly pool: string;
  readonly workerId: string;
  /** The longest a client's grant or renewal runs: at most YIELD_HOLD_MS (1 s). */
  readonly leaseTtlMs: number;
  readonly silentAfterMs: number;
  readonly snapshotFile: string | undefined;
}

export class AgentSettingsError extends Error {
  override readonly name = "AgentSettingsError";
}

/** The longest grant the agent gives: within it, its clients stop as the broker's yielding workers do. */
export const AGENT_MAX_LEASE_TTL_MS = 1_000;

export function agentSettings(input: AgentInput, defaultWorkerId: string): AgentSettings {
  const listen = input.listen === undefined || input.listen === "" ? "127.0.0.1:50052" : input.listen;
  if (!listen.startsWith("unix:")) {
    const host = hostOf(listen);
    const tokens = input.tokensFile !== undefined && input.tokensFile !== "";
    if (!isLoopback(host)) {
      throw new AgentSettingsError(
        tokens
          ? `AGENT_LISTEN_ADDRESS ${listen}: client tokens (AGENT_TOKENS_FILE) are not served yet; bind the agent to loopback or a unix: socket`
          : `AGENT_LISTEN_ADDRESS ${listen} is not loopback: an agent on a real address needs AGENT_TOKENS_FILE (clients authenticate)`,
      );
    }
  }
  const leaseTtlMs = ms(input.leaseTtlMs, AGENT_MAX_LEASE_TTL_MS, "AGENT_LEASE_TTL_MS", 100);
  if (leaseTtlMs > AGENT_MAX_LEASE_TTL_MS) {
    throw new AgentSettingsError(
      `AGENT_LEASE_TTL_MS: at most ${AGENT_MAX_LEASE_TTL_MS} (the second other workers wait for the agent's clients in an outage), got "${String(input.leaseTtlMs)}"`,
    );
  }
  const silentAfterMs = ms(input.silentAfterMs, 3_000, "AGENT_SILENT_AFTER_MS", 1_000);
  if (silentAfterMs > 3_000) throw new AgentSettingsError(`AGENT_SILENT_AFTER_MS: at most 3000, got "${String(input.silentAfterMs)}"`);
  const address = input.address === undefined || input.address === "" ? "127.0.0.1:50051" : input.address;
  const brokers = address.includes(",") && !/^(ipv4|ipv6|dns):/.test(address) ? `ipv4:${address}` : address;
  return {
    listen,
    brokerTarget: brokers,
    brokerToken: input.token === undefined || input.token === "" ? undefined : input.token,
    pool: input.pool === undefined || input.pool === "" ? "default" : input.pool,
    workerId: input.workerId === undefined || input.workerId === "" ? defaultWorkerId : input.workerId,
    leaseTtlMs,
    silentAfterMs,
    snapshotFile: input.snapshotFile === undefined || input.snapshotFile === "" ? undefined : input.snapshotFile,
  };
}

function hostOf(address: string): string {
  const m = /^\[([^\]]+)\]:\d+$/.exec(address) ?? /^([^:]+):\d+$/.exec(address);
  if (m === null) throw new AgentSettingsError(`AGENT_LISTEN_ADDRESS: expected host:port or unix:/path, got "${address}"`);
  return m[1] ?? "";
}

function ms(raw: string | undefined, fallback: number, name: string, min: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new AgentSettingsError(`${name}: an integer ≥ ${min} (ms), got "${raw}"`);
  return n;
}
