import type { OutcomeKindName } from "../model/model.js";
import { header } from "./headers.js";
import type { ResponseFacts } from "./types.js";

/**
 * Error responses made by the proxy rather than the target: Squid's `X-Squid-Error`, or an RFC
 * 9209 `Proxy-Status` with an `error` parameter. The proxy is at fault (PROXY_ERROR), except
 * when it reports that the target's name does not resolve or the target is unavailable
 * (TARGET_ERROR, like a local ENOTFOUND for the target). Internal to the classifier.
 */

/** Proxy error types that blame the target, not the proxy. */
const TARGET_SIDE = /dns|destination_not_found|destination_unavailable/i;

/** The `error` parameter of the first Proxy-Status member that has one. */
function proxyStatusError(value: string): string | undefined {
  for (const member of value.split(",")) {
    for (const param of member.split(";").slice(1)) {
      const [k, v] = param.split("=", 2);
      if (k?.trim().toLowerCase() === "error" && v !== undefined && v.trim() !== "") return v.trim().replace(/^"|"$/g, "");
    }
  }
  return undefined;
}

/** What a proxy-made error response says, or undefined when the target made the response. */
export interface ProxyVerdict {
  readonly kind: Extract<OutcomeKindName, "PROXY_ERROR" | "TARGET_ERROR">;
  readonly reason: string;
}

/** Checks a 4xx/5xx response for the headers in `names` (lowercase). */
export function proxyMadeError(facts: ResponseFacts, names: readonly string[]): ProxyVerdict | undefined {
  if (facts.status < 400) return undefined;
  for (const name of names) {
    const raw = header(facts, name.toLowerCase());
    if (raw === undefined) continue;
    const error = name.toLowerCase() === "proxy-status" ? proxyStatusError(raw) : raw.trim().split(/\s+/)[0] || name;
    if (error === undefined) continue;
    return TARGET_SIDE.test(error)
      ? { kind: "TARGET_ERROR", reason: `${facts.status} from the proxy: target unreachable (${name}: ${error})` }
      : { kind: "PROXY_ERROR", reason: `${facts.status} made by the proxy (${name}: ${error})` };
  }
  return undefined;
}
