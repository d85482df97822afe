/**
 * The HTTPS mode of a crawl (CRAWL_HTTPS): read from the environment and checked against the
 * strategies. `tunnel`: the gateway relays CONNECT tunnels (a lease per tunnel); `intercept`: the
 * gateway ends TLS with a CA the workers trust (a lease per request inside the tunnel). Unset:
 * plain HTTP. Only the `gateway` strategy speaks HTTPS; the others are refused in this mode.
 */

export type HttpsMode = "off" | "tunnel" | "intercept";

/** The strategies whose workers send HTTPS in the HTTPS mode. */
export const HTTPS_STRATEGIES: readonly string[] = ["gateway"];

/** CRAWL_HTTPS: unset or empty: off; `tunnel` or `intercept`. */
export function readHttpsMode(env: NodeJS.ProcessEnv = process.env): HttpsMode {
  const raw = (env["CRAWL_HTTPS"] ?? "").trim();
  if (raw === "") return "off";
  if (raw === "tunnel" || raw === "intercept") return raw;
  throw new Error(`CRAWL_HTTPS must be tunnel or intercept (or unset: plain HTTP), got "${raw}"`);
}

/** Throws when the mode is on and a strategy cannot run over HTTPS. */
export function checkHttpsStrategies(mode: HttpsMode, strategies: readonly string[]): void {
  if (mode === "off") return;
  const refused = strategies.filter((s) => !HTTPS_STRATEGIES.includes(s));
  if (refused.length > 0)
    throw new Error(
      `CRAWL_HTTPS=${mode} runs only ${HTTPS_STRATEGIES.join(", ")} over HTTPS; ${refused.join(", ")}: plain HTTP only (set CRAWL_STRATEGIES=${HTTPS_STRATEGIES.join(",")})`,
    );
}

/**
 * Whether CRAWL_GATE judges the gateway: not in tunnel mode with kept-alive connections, where
 * pacing holds per tunnel, not per request. With a new connection per request
 * (CRAWL_HTTPS_CONNECTIONS=per-request) a tunnel is a request, and the gateway is judged.
 */
export function gatewayGated(mode: HttpsMode, connections: "keep-alive" | "per-request" = "keep-alive"): boolean {
  return mode !== "tunnel" || connections === "per-request";
}

/** "HTTPS, gateway in interception mode" (empty for plain HTTP). */
export function describeHttps(mode: HttpsMode): string {
  if (mode === "off") return "";
  return `HTTPS, gateway in ${mode === "tunnel" ? "tunnel" : "interception"} mode`;
}
