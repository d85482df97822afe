/** LOG_LEVEL: the levels there are, and the one the environment asks for. */

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
const LEVELS = new Set<string>(LOG_LEVELS);

/** The level LOG_LEVEL asks for (info when unset; a bad one: info, with `bad` — the settings refuse it). */
export function logLevel(env: Readonly<Record<string, string | undefined>>): { level: string; bad?: string } {
  const raw = (env["LOG_LEVEL"] ?? "info").trim().toLowerCase();
  return LEVELS.has(raw) ? { level: raw } : { level: "info", bad: raw };
}
