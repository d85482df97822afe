/**
 * A request inside an intercepted tunnel, before it is leased: its parameters (the tunnel's, with
 * the request's own parameter headers over them, those headers then removed) and the URL it asks
 * for on the tunnel's host — or why it is refused. A request for another host than the tunnel's
 * is refused: the tunnel's host was the one checked and leased for.
 */
import type { IncomingMessage } from "node:http";
import { hostFromDomain } from "@proxybroker/sdk/model";
import type { Refusal } from "./answers.js";
import type { TunnelTarget } from "./intercept.js";
import { paramHeadersRefusal, withParamHeaders } from "./params.js";
import type { GatewayParams } from "./params.js";

/** What a request inside a tunnel asks for. */
export interface TunnelRequest {
  readonly params: GatewayParams;
  readonly url: string;
}

/** The request's parameters and URL, or the refusal to answer it with. */
export function tunnelRequest(req: IncomingMessage, target: TunnelTarget): TunnelRequest | { readonly refused: Refusal } {
  let params: GatewayParams;
  try {
    params = withParamHeaders(target.params, req);
  } catch (err) {
    return { refused: paramHeadersRefusal(err) };
  }
  if (!sameHost(req.headers.host, target.host)) {
    return {
      refused: { status: 400, message: `Host ${String(req.headers.host).slice(0, 200)} is not the tunnel's (${target.host})`, headers: {} },
    };
  }
  const authority = target.host.includes(":") ? `[${target.host}]` : target.host;
  return { params, url: `https://${authority}${target.port === 443 ? "" : `:${target.port}`}${req.url ?? "/"}` };
}

/** A request's Host header names the tunnel's host (domain-key rules: case, port, IDN); none counts as the same. */
export function sameHost(header: string | undefined, tunnelHost: string): boolean {
  if (header === undefined || header === "") return true;
  try {
    return hostFromDomain(header) === hostFromDomain(tunnelHost);
  } catch {
    return false;
  }
}
