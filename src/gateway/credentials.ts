/**
 * Whether a gateway client meant to pass parameters that never came (docs/gateway.md, "Browsers").
 * Browsers, and many HTTP clients, send `Proxy-Authorization` only after a `407` challenge: on a
 * gateway that does not challenge, a browser's proxy username — its session, tier, labels, pool
 * and wait — never arrives, and nothing else tells. A request without credentials whose
 * User-Agent is a browser's is the one case the gateway can tell: it counts it and says so.
 */

import { RefusalError } from "./answers.js";

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

/**
 * The username and password of a request's `Proxy-Authorization` (Basic: base64 of `user:pass`;
 * no colon: all username). No header, or an empty one: both empty. Throws RefusalError (400) for another scheme or
 * a header with no credentials in it.
 */
export function proxyCredentials(header: string | undefined): { readonly username: string; readonly password: string } {
  const h = header?.trim() ?? "";
  if (h === "") return { username: "", password: "" };
  const space = h.indexOf(" ");
  if (space < 0 || h.slice(0, space).toLowerCase() !== "basic") {
    throw new RefusalError({ status: 400, message: 'Proxy-Authorization must be "Basic <base64 of user:password>"', headers: {} });
  }
  const pair = Buffer.from(h.slice(space + 1).trim(), "base64").toString();
  const colon = pair.indexOf(":");
  return colon < 0 ? { username: pair, password: "" } : { username: pair.slice(0, colon), password: pair.slice(colon + 1) };
}
