import { readFile } from "node:fs/promises";
import { InvalidInputError } from "@proxybroker/sdk/model";
import type { ProxySpecInput } from "@proxybroker/sdk/model";
import { parseProxySpec } from "@proxybroker/sdk/model";

/**
 * The proxies file loaded at start: one proxy per line, `url [tier=NAME] [key=value ...]`;
 * blank lines and lines starting with `#` are skipped. A bad line refuses to start with its
 * line number.
 */
export function parseProxiesFile(text: string, fileName: string): ProxySpecInput[] {
  const out: ProxySpecInput[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    try {
      out.push(parseProxyLine(line));
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new InvalidInputError(`${fileName}:${i + 1}: ${why}`);
    }
  });
  return out;
}

/** One line of a proxies file: `url [tier=NAME] [key=value ...]`. Throws `InvalidInputError`. */
export function parseProxyLine(line: string): ProxySpecInput {
  const [url = "", ...rest] = line.trim().split(/\s+/);
  let tier = "";
  const labels: Record<string, string> = {};
  for (const [i, word] of rest.entries()) {
    // named by its place: a password with a space in it would make its end a word of its own
    const eq = word.indexOf("=");
    if (eq <= 0) throw new InvalidInputError(`word ${i + 2} of the line is not key=value`);
    const k = word.slice(0, eq);
    const v = word.slice(eq + 1);
    if (k === "tier") tier = v;
    else labels[k] = v;
  }
  return parseProxySpec({ url, tier, labels });
}

/** Read and parse a proxies file. */
export async function loadProxiesFile(path: string): Promise<ProxySpecInput[]> {
  return parseProxiesFile(await readFile(path, "utf8"), path);
}
