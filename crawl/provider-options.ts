/**
 * The provider scenario of a crawl (CRAWL_SCENARIO=provider): the strategies share a simulated
 * proxy provider's sessions (test/support/provider-sim.ts) — many sessions leaving from fewer exit
 * IPs — instead of one tinyproxy per IP. Read from the environment.
 */
import type { ExitAssignment, ProviderMode } from "../test/support/provider-sim.js";

export interface ProviderScenario {
  /** `username`: sessions in the proxy username on one endpoint; `ports`: a port per session. */
  readonly mode: ProviderMode;
  /** The session URLs given to the strategies. */
  readonly sessions: number;
  /** The exit IPs the sessions share: what the sites see, and what efficiency is measured against. */
  readonly exits: number;
  readonly assignment: ExitAssignment;
  /** CRAWL_GATE: the least efficiency against the exits of ProxyBroker's strategies. */
  readonly minEfficiency: number;
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, def: number): number {
  const raw = env[name] ?? "";
  if (raw === "") return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be an integer ≥ 1, got "${raw}"`);
  return n;
}

/**
 * CRAWL_SCENARIO (unset or empty: none; `provider`), CRAWL_PROVIDER_MODE (`username` or `ports`),
 * CRAWL_PROVIDER_SESSIONS (12), CRAWL_PROVIDER_EXITS (4), CRAWL_PROVIDER_ASSIGN (`order` or
 * `hash`) and CRAWL_PROVIDER_MIN_EFFICIENCY (0.8).
 */
export function readProvider(env: NodeJS.ProcessEnv = process.env): ProviderScenario | undefined {
  const scenario = (env["CRAWL_SCENARIO"] ?? "").trim();
  if (scenario === "") return undefined;
  if (scenario !== "provider") throw new Error(`CRAWL_SCENARIO must be provider (or unset), got "${scenario}"`);
  const mode = (env["CRAWL_PROVIDER_MODE"] ?? "").trim() || "username";
  if (mode !== "username" && mode !== "ports") throw new Error(`CRAWL_PROVIDER_MODE must be username or ports, got "${mode}"`);
  const assignment = (env["CRAWL_PROVIDER_ASSIGN"] ?? "").trim() || "order";
  if (assignment !== "order" && assignment !== "hash") throw new Error(`CRAWL_PROVIDER_ASSIGN must be order or hash, got "${assignment}"`);
  const rawMin = env["CRAWL_PROVIDER_MIN_EFFICIENCY"] ?? "";
  const minEfficiency = rawMin === "" ? 0.8 : Number(rawMin);
  if (!Number.isFinite(minEfficiency) || minEfficiency < 0)
    throw new Error(`CRAWL_PROVIDER_MIN_EFFICIENCY must be a number ≥ 0, got "${rawMin}"`);
  return {
    mode,
    sessions: positiveInt(env, "CRAWL_PROVIDER_SESSIONS", 12),
    exits: positiveInt(env, "CRAWL_PROVIDER_EXITS", 4),
    assignment,
    minEfficiency,
  };
}

/** "12 username sessions over 4 exits (order)". */
export function describeProvider(p: ProviderScenario): string {
  return `provider: ${p.sessions} ${p.mode === "username" ? "username" : "port"} sessions over ${p.exits} exits (${p.assignment})`;
}
