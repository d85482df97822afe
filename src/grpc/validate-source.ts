/** An AddSource request checked at the edge (docs/spec.md §11): every refusal names its field. */
import { isAbsolute } from "node:path";
import { InvalidInputError, validateTierAndLabels } from "@proxybroker/sdk/model";
import type { SourceSpec } from "@proxybroker/sdk/model";
import type { AddSourceRequest } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { msOf } from "@proxybroker/sdk/wire";

export const DEFAULT_SOURCE_INTERVAL_MS = 300_000;
export const MIN_SOURCE_INTERVAL_MS = 10_000;
const MAX_INTERVAL_MS = 86_400_000;
const MAX_URL = 2000;
const STEP = "[A-Za-z0-9_$-]+";
const JSON_PATH = new RegExp(`^(${STEP}(\\.${STEP})*)?(\\[\\](\\.${STEP})+)?$`);

/** What the request says of a source: the stored spec but for what the broker gives it. */
export type CheckedSource = Omit<SourceSpec, "id" | "pool" | "createdAt">;

export function checkSource(req: AddSourceRequest): CheckedSource {
  const url = req.url.trim();
  if (url === "" || url.length > MAX_URL) throw new InvalidInputError(`url must be 1 to ${MAX_URL} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError("url is not a URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new InvalidInputError("url must be http or https");
  const format = req.format === "" ? "lines" : req.format;
  if (format !== "lines" && format !== "json") throw new InvalidInputError(`format "${req.format}" is not lines or json`);
  if (format === "lines" && req.jsonPath !== "") throw new InvalidInputError("json_path needs format json");
  if (req.jsonPath.length > 200 || !JSON_PATH.test(req.jsonPath)) {
    throw new InvalidInputError("json_path is not a dotted path (data.proxies, or list[].url)");
  }
  if (req.headersFile !== "" && (!isAbsolute(req.headersFile) || req.headersFile.length > 1000)) {
    throw new InvalidInputError("headers_file must be an absolute path on the broker's machine");
  }
  const intervalMs = req.interval === undefined ? DEFAULT_SOURCE_INTERVAL_MS : msOf(req.interval);
  if (!(intervalMs >= MIN_SOURCE_INTERVAL_MS && intervalMs <= MAX_INTERVAL_MS)) {
    throw new InvalidInputError(`interval must be from ${MIN_SOURCE_INTERVAL_MS / 1000} s to a day`);
  }
  validateTierAndLabels(req.tier, req.labels);
  return {
    url: parsed.toString(),
    format,
    jsonPath: req.jsonPath,
    headersFile: req.headersFile,
    intervalMs,
    tier: req.tier,
    labels: { ...req.labels },
  };
}
