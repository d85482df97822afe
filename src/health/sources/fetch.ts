/**
 * GET a source's list: with its headers, within a timeout, at most `maxBytes` of body. Errors
 * never carry the URL's query or a header (both may hold an API key).
 */
import { SourceFetchError } from "./errors.js";

export interface FetchListOptions {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly maxBytes: number;
}

export async function fetchList(opts: FetchListOptions): Promise<string> {
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let res: Response;
  try {
    res = await fetch(opts.url, { headers: { accept: "application/json, text/plain, */*", ...opts.headers }, signal, redirect: "follow" });
  } catch (err) {
    throw new SourceFetchError(signal.aborted ? `no answer within ${opts.timeoutMs} ms` : `fetch failed (${causeOf(err)})`);
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new SourceFetchError(`answered HTTP ${res.status}`);
  }
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > opts.maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw new SourceFetchError(`answer of ${declared} bytes is larger than ${opts.maxBytes}`);
  }
  return readCapped(res, opts, signal);
}

async function readCapped(res: Response, opts: FetchListOptions, signal: AbortSignal): Promise<string> {
  const reader = res.body?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > opts.maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new SourceFetchError(`answer is larger than ${opts.maxBytes} bytes`);
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof SourceFetchError) throw err;
    throw new SourceFetchError(signal.aborted ? `no answer within ${opts.timeoutMs} ms` : `answer cut off (${causeOf(err)})`);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A network error's code, not its message (which may quote the URL). */
function causeOf(err: unknown): string {
  const cause = err instanceof Error && err.cause !== undefined ? err.cause : err;
  if (typeof cause === "object" && cause !== null && "code" in cause) return String(cause.code);
  return err instanceof Error ? err.name : "error";
}
