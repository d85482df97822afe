/**
 * Headers of one hop only (RFC 9110 §7.6.1), with the old `Proxy-Connection` and the client's
 * proxy credentials: never passed on, either way, plain HTTP or intercepted.
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
