/**
 * Who may read the status page and `/status.json` (docs/spec.md §8 Authentication): with
 * AUTH_TOKENS_FILE, an admin token only — they show worker ids, the domains crawled, exit IPs and
 * the sources — sent as `Authorization: Bearer <token>`, or by a browser as HTTP Basic with any
 * user name and the token as password (the page's own requests then carry it too). Without
 * AUTH_TOKENS_FILE, anyone who reaches METRICS_ADDRESS, as for every other port.
 */
import type { IncomingMessage } from "node:http";
import type { TokenTable } from "../security/tokens.js";

const BEARER = /^bearer\s+(\S+)\s*$/i;
const BASIC = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i;

/** The answer to one request for the status page: let it through, or refuse it with a status and a reason. */
export type StatusAccess = { readonly ok: true } | { readonly ok: false; readonly code: 401 | 403; readonly reason: string };

/** The token an `Authorization` header carries (Bearer, or Basic's password), or undefined. */
function tokenOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const bearer = BEARER.exec(header);
  if (bearer !== null) return bearer[1];
  const basic = BASIC.exec(header);
  if (basic === null) return undefined;
  const pair = Buffer.from(basic[1] ?? "", "base64").toString("utf8");
  const colon = pair.indexOf(":");
  return colon < 0 ? undefined : pair.slice(colon + 1);
}

/** Whether `req` may read the status page, with the tokens in force (undefined: none required). */
export function statusAccess(req: IncomingMessage, tokens: TokenTable | undefined): StatusAccess {
  if (tokens === undefined) return { ok: true };
  const token = tokenOf(req.headers.authorization);
  if (token === undefined || token === "") {
    return { ok: false, code: 401, reason: "the status page needs an admin token: Authorization: Bearer <token>" };
  }
  const owner = tokens.lookup(token);
  if (owner === undefined) return { ok: false, code: 401, reason: "unknown token" };
  if (owner.role !== "admin") return { ok: false, code: 403, reason: "the status page needs an admin token, not a worker's" };
  return { ok: true };
}
