import * as grpc from "@grpc/grpc-js";
import type { Role, TokenOwner, TokenTable } from "./tokens.js";

/** Which role a method needs: undefined = open (health, reflection). */
export type MethodRoles = (path: string) => Role | undefined;

/** ProxyBroker methods need a worker (or admin) token, ProxyAdmin methods an admin token. */
export function serviceRoles(services: { readonly worker: string; readonly admin: string }): MethodRoles {
  return (path) => {
    const service = path.slice(1, path.lastIndexOf("/"));
    if (service === services.admin) return "admin";
    if (service === services.worker) return "worker";
    return undefined;
  };
}

export interface AuthOptions {
  /** The current token table (re-read on SIGHUP); undefined = no authentication. */
  readonly tokens: () => TokenTable | undefined;
  readonly roles: MethodRoles;
  /** Told of every refused call (for metrics). */
  readonly onRefused?: (code: grpc.status, path: string) => void;
}

/** The verdict on one call's `authorization` metadata. */
export type Verdict =
  | { readonly ok: true; readonly owner: TokenOwner | undefined }
  | { readonly ok: false; readonly code: grpc.status; readonly details: string };

const BEARER = /^bearer\s+(\S+)\s*$/i;

/**
 * Metadata key under which the interceptor hands a checked token's name to the handlers. Whatever
 * a client sends under it is removed first, so a handler can trust it.
 */
const CALLER_KEY = "proxybroker-caller";

/** The name of the token a call was authorized with ("" = none: no authentication, or a token without a name). */
export function callerName(call: { readonly metadata: grpc.Metadata }): string {
  const v = call.metadata.get(CALLER_KEY)[0];
  return typeof v === "string" ? v : "";
}

/** Check the call's metadata against the table for a method that needs `needed`. */
export function authorize(table: TokenTable | undefined, needed: Role | undefined, metadata: grpc.Metadata): Verdict {
  if (table === undefined || needed === undefined) return { ok: true, owner: undefined };
  const values = metadata.get("authorization");
  const header = values.length === 1 && typeof values[0] === "string" ? values[0] : undefined;
  const token = header === undefined ? undefined : BEARER.exec(header)?.[1];
  if (token === undefined) {
    return { ok: false, code: grpc.status.UNAUTHENTICATED, details: 'missing credentials: send metadata "authorization: Bearer <token>"' };
  }
  const owner = table.lookup(token);
  if (owner === undefined) return { ok: false, code: grpc.status.UNAUTHENTICATED, details: "unknown token" };
  if (needed === "admin" && owner.role !== "admin") {
    return { ok: false, code: grpc.status.PERMISSION_DENIED, details: "this token's role is worker: ProxyAdmin needs an admin token" };
  }
  return { ok: true, owner };
}

/**
 * A grpc-js server interceptor that checks the bearer token before a call reaches its handler:
 * a refused call ends with its status at once and its handler never runs.
 */
export function authInterceptor(opts: AuthOptions): grpc.ServerInterceptor {
  return (method, call) => {
    const needed = opts.roles(method.path);
    if (needed === undefined) return new grpc.ServerInterceptingCall(call);
    const listener = new grpc.ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        metadata.remove(CALLER_KEY);
        const verdict = authorize(opts.tokens(), needed, metadata);
        if (verdict.ok) {
          if (verdict.owner?.name !== undefined) metadata.set(CALLER_KEY, verdict.owner.name);
          next(metadata);
          return;
        }
        opts.onRefused?.(verdict.code, method.path);
        call.sendStatus({ code: verdict.code, details: verdict.details, metadata: new grpc.Metadata() });
      })
      .build();
    const responder = new grpc.ResponderBuilder().withStart((next) => next(listener)).build();
    return new grpc.ServerInterceptingCall(call, responder);
  };
}
