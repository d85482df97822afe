/**
 * A source's request headers, read from a file on the broker's machine at each fetch: `Name: value`
 * lines, blank lines and `#` comments skipped. Errors name the line, never a value (an API key).
 * Only files inside SOURCE_HEADERS_DIR are read (after links are resolved): an admin token cannot
 * make the broker send any other file's lines to a URL of its choice.
 */
import { open, realpath } from "node:fs/promises";
import { sep } from "node:path";
import { SourceFetchError } from "./errors.js";

/** Largest headers file read. */
const MAX_BYTES = 64 * 1024;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

export function parseHeaders(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const colon = line.indexOf(":");
    const name = colon < 0 ? "" : line.slice(0, colon).trim();
    if (!TOKEN.test(name)) throw new SourceFetchError(`headers file line ${i + 1} is not "Name: value"`);
    const value = line.slice(colon + 1).trim();
    if (hasControl(value)) throw new SourceFetchError(`headers file line ${i + 1} has a control character`);
    out[name] = value;
  });
  return out;
}

/** Reads the headers of a file inside `dir` (SOURCE_HEADERS_DIR; "" = none may be read). */
export type HeadersReader = (path: string) => Promise<Record<string, string>>;

export function headersReader(dir: string): HeadersReader {
  return (path) => readHeaders(path, dir);
}

/** The headers of `path` ("" = none), a file inside `dir`. */
export async function readHeaders(path: string, dir: string): Promise<Record<string, string>> {
  if (path === "") return {};
  if (dir === "") throw new SourceFetchError("headers files are read from SOURCE_HEADERS_DIR only, and it is not set");
  let buf: Buffer;
  try {
    const [real, realDir] = await Promise.all([realpath(path), realpath(dir)]);
    if (!real.startsWith(realDir.endsWith(sep) ? realDir : realDir + sep)) {
      throw new SourceFetchError(`headers file ${path} is not inside SOURCE_HEADERS_DIR`);
    }
    const file = await open(real, "r");
    try {
      const st = await file.stat();
      // a device or a FIFO is never read (it may not end)
      if (!st.isFile()) throw new SourceFetchError(`headers file ${path} is not a regular file`);
      if (st.size > MAX_BYTES) throw new SourceFetchError(`headers file ${path} is larger than ${MAX_BYTES} bytes`);
      buf = await file.readFile();
    } finally {
      await file.close();
    }
  } catch (err) {
    if (err instanceof SourceFetchError) throw err;
    const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "unreadable";
    throw new SourceFetchError(`headers file ${path} cannot be read (${code})`);
  }
  if (buf.length > MAX_BYTES) throw new SourceFetchError(`headers file ${path} is larger than ${MAX_BYTES} bytes`);
  return parseHeaders(buf.toString("utf8"));
}

/** A control character other than tab (a header value cannot carry it). */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 32 && c !== 9) || c === 127) return true;
  }
  return false;
}
