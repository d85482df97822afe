/**
 * Test helper: a proxy provider on loopback, as residential/ISP providers sell them — many
 * sessions leaving from fewer exit IPs. Two modes:
 *
 * - `username`: one endpoint; the session is in the proxy username, `cust-session-<name>` (anything
 *   after a further `-` is ignored, as provider parameters are), with one fixed password; missing
 *   or wrong credentials get 407;
 * - `ports`: one port per session (port i = session i), no credentials asked.
 *
 * Each session name is mapped stably onto one of K exits (127.0.0.2 … 127.0.0.(K+1) by default;
 * `provider-exits.ts`), and the upstream connection to the target leaves from that address, so
 * the target sees it as the client IP. `remap` moves a session to another exit at run time.
 * Forwarding (HTTP absolute-form and CONNECT): `provider-forward.ts`; a site answering the caller's
 * IP as JSON: `echo-site.ts`.
 */
import type { IncomingMessage } from "node:http";
import { createExitTable, loopbackExits } from "./provider-exits.js";
import type { ExitAssignment } from "./provider-exits.js";
import { createForwardingServer, listenOn } from "./provider-forward.js";
import type { Admission, ForwardingServer } from "./provider-forward.js";

export type { ExitAssignment } from "./provider-exits.js";

export type ProviderMode = "username" | "ports";

export interface ProviderSimOptions {
  readonly mode: ProviderMode;
  /** Sessions offered (`sessions` of the result): in `ports` mode, one port each. Default 12. */
  readonly sessions?: number;
  /** K, the exit addresses the sessions share. Default 4. */
  readonly exits?: number;
  /** Last octet of the first exit, 127.0.0.<firstExitOctet>. Default 2. */
  readonly firstExitOctet?: number;
  /** How sessions get their exit. Default `order`: the offered sessions round robin, in order. */
  readonly assignment?: ExitAssignment;
  /** `username` mode: the password of every session. Default `sim-secret`. */
  readonly password?: string;
  /** `username` mode: what a username starts with before the session name. Default `cust-session-`. */
  readonly usernamePrefix?: string;
  /** Listen address of the endpoint(s). Default 127.0.0.1. */
  readonly host?: string;
}

/** One session the simulator offers. */
export interface SimSession {
  /** `s1` … `sN` */
  readonly name: string;
  /** The proxy URL: `http://cust-session-s1:PW@127.0.0.1:PORT` or `http://127.0.0.1:PORTi`. */
  readonly url: string;
}

export interface ProviderSim {
  readonly mode: ProviderMode;
  /** The exit addresses, in order. */
  readonly exits: readonly string[];
  readonly sessions: readonly SimSession[];
  /** The session's current exit (a session name not offered gets one on first sight). */
  exitOf(session: string): string;
  /** From now on `session` leaves from `exit` (e.g. another of `exits`, or a new loopback address). */
  remap(session: string, exit: string): void;
  /** Requests and tunnels forwarded so far, per exit address. */
  forwarded(): ReadonlyMap<string, number>;
  close(): Promise<void>;
}

const DEFAULT_PREFIX = "cust-session-";

/** The session named by a `Proxy-Authorization: Basic …` header, or why it names none. */
export function sessionFromAuthorization(
  header: string | undefined,
  opts: { readonly prefix: string; readonly password: string },
): { readonly session: string } | { readonly refused: string } {
  const m = /^Basic\s+(\S+)$/i.exec(header ?? "");
  if (m === null) return { refused: "no Basic proxy credentials" };
  const decoded = Buffer.from(m[1] ?? "", "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return { refused: "malformed credentials" };
  const username = decoded.slice(0, colon);
  if (decoded.slice(colon + 1) !== opts.password) return { refused: "wrong password" };
  if (!username.startsWith(opts.prefix)) return { refused: `username must start with ${opts.prefix}` };
  const session = username.slice(opts.prefix.length).split("-")[0] ?? "";
  if (!/^[A-Za-z0-9_]+$/.test(session)) return { refused: "no session name in the username" };
  return { session };
}

export async function startProviderSim(options: ProviderSimOptions): Promise<ProviderSim> {
  const count = options.sessions ?? 12;
  if (!Number.isInteger(count) || count < 1) throw new Error(`sessions must be an integer ≥ 1, got ${count}`);
  const host = options.host ?? "127.0.0.1";
  const password = options.password ?? "sim-secret";
  const prefix = options.usernamePrefix ?? DEFAULT_PREFIX;
  const table = createExitTable({
    exits: loopbackExits(options.exits ?? 4, options.firstExitOctet ?? 2),
    assignment: options.assignment ?? "order",
  });
  const names = Array.from({ length: count }, (_, i) => `s${i + 1}`);
  for (const name of names) table.exitOf(name); // the offered sessions first, in order
  const counts = new Map<string, number>();
  const onForward = (exit: string): void => void counts.set(exit, (counts.get(exit) ?? 0) + 1);
  const servers: ForwardingServer[] = [];
  const sessions: SimSession[] = [];
  try {
    if (options.mode === "username") {
      const admit = (req: IncomingMessage): Admission => {
        const who = sessionFromAuthorization(req.headers["proxy-authorization"], { prefix, password });
        return "refused" in who ? who : { exit: table.exitOf(who.session) };
      };
      const fwd = createForwardingServer({ admit, onForward });
      servers.push(fwd);
      const port = await listenOn(fwd.server, host);
      for (const name of names) sessions.push({ name, url: `http://${prefix}${name}:${encodeURIComponent(password)}@${host}:${port}` });
    } else {
      for (const name of names) {
        const fwd = createForwardingServer({ admit: () => ({ exit: table.exitOf(name) }), onForward });
        servers.push(fwd);
        const port = await listenOn(fwd.server, host);
        sessions.push({ name, url: `http://${host}:${port}` });
      }
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()));
    throw err;
  }
  return {
    mode: options.mode,
    exits: table.exits,
    sessions,
    exitOf: (session) => table.exitOf(session),
    remap: (session, exit) => table.remap(session, exit),
    forwarded: () => new Map(counts),
    close: async () => {
      await Promise.all(servers.map((s) => s.close()));
    },
  };
}
