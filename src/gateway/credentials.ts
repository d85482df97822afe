/**
 * Whether a gateway client meant to pass parameters that never came (docs/gateway.md, "Browsers").
 * Browsers, and many HTTP clients, send `Proxy-Authorization` only after a `407` challenge: on a
 * gateway that does not challenge, a browser's proxy username — its session, tier, labels, pool
 * and wait — never arrives, and nothing else tells. A request without credentials whose
 * User-Agent is a browser's is the one case the gateway can tell: it counts it and says so.
 */

/** What a gateway does with a request that carries no proxy credentials. */
export type CredentialsMode = "optional" | "required";

/** The User-Agents of browsers (Chromium, headless Chromium, Firefox, Safari, Edge: all `Mozilla/5.0 (…`). */
const BROWSER = /^Mozilla\/5\.0 \(/;

/** A request from a browser that sent no proxy credentials: its parameters, if it had any, were lost. */
export function browserWithoutCredentials(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  if (headers["proxy-authorization"] !== undefined) return false;
  const ua = headers["user-agent"];
  return typeof ua === "string" && BROWSER.test(ua);
}

/** At most one warning a minute: a browser without credentials sends every request so. */
export class WarnEvery {
  private last = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly everyMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** True when a warning may go out now (and one is noted as gone). */
  due(): boolean {
    const now = this.clock();
    if (now - this.last < this.everyMs) return false;
    this.last = now;
    return true;
  }
}
