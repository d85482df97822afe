import * as grpc from "@grpc/grpc-js";
import { InvalidArgumentError } from "./errors.js";

/** TLS material for the connection to the broker (PEM, as strings or buffers). */
export interface TlsOptions {
  /** CA certificate(s) that signed the broker's certificate. Default: the system's roots. */
  readonly ca?: string | Buffer;
  /** This worker's certificate chain, for a broker that requires client certificates (mTLS). */
  readonly cert?: string | Buffer;
  /** The private key of `cert`. */
  readonly key?: string | Buffer;
}

function pem(name: string, v: string | Buffer | undefined): Buffer | null {
  if (v === undefined) return null;
  if (typeof v === "string") return Buffer.from(v);
  if (Buffer.isBuffer(v)) return v;
  throw new InvalidArgumentError(`${name} must be a PEM string or Buffer`);
}

/** Channel credentials from `tls` (or plaintext without it). Throws `InvalidArgumentError` for bad material. */
export function channelCredentials(tls: TlsOptions | undefined): grpc.ChannelCredentials {
  if (tls === undefined) return grpc.credentials.createInsecure();
  if (typeof tls !== "object" || tls === null) throw new InvalidArgumentError("tls must be an object { ca?, cert?, key? }");
  const cert = pem("tls.cert", tls.cert);
  const key = pem("tls.key", tls.key);
  if ((cert === null) !== (key === null)) throw new InvalidArgumentError("tls.cert and tls.key go together");
  return grpc.credentials.createSsl(pem("tls.ca", tls.ca), key, cert);
}

/** Bearer tokens: printable ASCII without spaces, as the broker's tokens file holds them. */
const TOKEN = /^[\x21-\x7e]{1,4096}$/;

/** Check a token option; throws `InvalidArgumentError`. */
export function checkToken(token: string | undefined): void {
  if (token !== undefined && (typeof token !== "string" || !TOKEN.test(token))) {
    throw new InvalidArgumentError("token must be printable ASCII without spaces");
  }
}

/**
 * A client interceptor that sends `authorization: Bearer <token>` with every call, over TLS and
 * over plaintext alike (grpc-js attaches call credentials only to secure channels).
 */
export function tokenInterceptor(token: string): grpc.Interceptor {
  const value = `Bearer ${token}`;
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set("authorization", value);
        next(metadata, listener);
      },
    });
}
