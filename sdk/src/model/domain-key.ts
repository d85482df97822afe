import { domainToASCII } from "node:url";

/**
 * Host and domain-key rules (SPEC §1): the domain-key of a target is its lowercased host, without
 * port and trailing dot, IDN in punycode. Functions here throw `InvalidInputError` with a message
 * that says what is wrong; the broker maps it to INVALID_ARGUMENT.
 */

/** Bad input from a caller; `message` says what is wrong. */
export class InvalidInputError extends Error {
  override readonly name = "InvalidInputError";
  readonly code = "INVALID_INPUT";
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const PLAIN = /^[a-z0-9.-]+$/;
const IPV6_BRACKETED = /^\[[0-9a-f:.]+\]$/;

/** True when `host` (already lowercase ASCII) is a valid DNS name, IPv4 or bracketed IPv6. */
export function isValidHost(host: string): boolean {
  if (IPV4.test(host) || IPV6_BRACKETED.test(host)) return true;
  if (host.length === 0 || host.length > 253) return false;
  return host.split(".").every((label) => LABEL.test(label));
}

/** Normalise a host: lowercase, punycode, no trailing dot. Throws when it is not a valid host. */
export function normalizeHost(raw: string, what = "domain"): string {
  const trimmed = raw.trim();
  if (trimmed === "") throw new InvalidInputError(`${what} is empty`);
  // a host name has at most 253 characters (an IDN a little more before punycode)
  if (trimmed.length > 1024) throw new InvalidInputError(`${what} is longer than 1024 characters`);
  if (trimmed.startsWith("[")) {
    const v6 = trimmed.toLowerCase();
    if (IPV6_BRACKETED.test(v6)) return v6;
    throw new InvalidInputError(`${what} "${raw}" is not a valid IPv6 literal`);
  }
  const noDot = trimmed.endsWith(".") ? trimmed.slice(0, -1) : trimmed;
  // Already lowercase ASCII (the common case) needs no IDN conversion.
  const ascii = PLAIN.test(noDot) ? noDot : domainToASCII(noDot.toLowerCase());
  if (ascii === "" || !isValidHost(ascii)) {
    throw new InvalidInputError(`${what} "${raw}" is not a valid host name`);
  }
  return ascii;
}

/** The host of a `domain` field, which may carry a port (`example.com:8443`). */
export function hostFromDomain(domain: string): string {
  const d = domain.trim();
  if (d.includes("/")) throw new InvalidInputError(`domain "${domain.slice(0, 200)}" must be a host, not a URL (use target_url)`);
  const portless = d.startsWith("[") ? d.replace(/^(\[[^\]]*\])(:\d+)?$/, "$1") : d.replace(/:\d+$/, "");
  return normalizeHost(portless, "domain");
}

/** Longest target_url accepted (only its host is used). */
export const MAX_URL_LENGTH = 8192;

/** The host of an http(s) target URL. */
export function hostFromUrl(targetUrl: string): string {
  if (targetUrl.length > MAX_URL_LENGTH) throw new InvalidInputError(`target_url is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(targetUrl);
  } catch {
    throw new InvalidInputError(`target_url "${targetUrl.slice(0, 200)}" is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new InvalidInputError(`target_url "${targetUrl.slice(0, 200)}" must be http or https, not ${url.protocol.slice(0, -1)}`);
  }
  return normalizeHost(url.hostname, "target_url host");
}

/** The target host of a request that gives `domain` or `targetUrl` (one of them). */
export function targetHost(input: { domain: string; targetUrl: string }): string {
  if (input.domain !== "") return hostFromDomain(input.domain);
  if (input.targetUrl !== "") return hostFromUrl(input.targetUrl);
  throw new InvalidInputError("give domain or target_url");
}
