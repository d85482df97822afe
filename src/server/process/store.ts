import { fileURLToPath } from "node:url";
import type { Settings } from "../../config/settings.js";
import { loadProxiesFile } from "../../config/proxies-file.js";
import type { LeaseStore } from "@proxybroker/sdk/engine";
import { createStore } from "../../store/create-store.js";
import { inspectRedis, persistenceLine, refusal } from "../../store/redis/index.js";
import { log, logger, messageOf, refuseToStart } from "./log.js";

/** Proxies of the proxies file added per store call. */
const PROXIES_FILE_CHUNK = 1_000;
const SAMPLE_POOL = fileURLToPath(new URL("../../../examples/proxies.txt", import.meta.url));

/** The store the process runs on, and what it is. */
export interface OpenedStore {
  readonly store: LeaseStore;
  readonly kind: "redis" | "embedded";
}

/** Open the store the settings name; a Redis that could lose grants without saying so refuses to start. */
export async function openStore(settings: Settings): Promise<OpenedStore> {
  const created = createStore(settings, (what, err) => logger.warn(`${what} failed: ${messageOf(err)}`), connectionErrorLog());
  if (created.kind === "redis") {
    const safety = await inspectRedis(created.client);
    const refused = refusal(safety);
    if (refused !== undefined) refuseToStart(refused);
    log(persistenceLine(safety));
  }
  return { store: created.store, kind: created.kind };
}

/**
 * Logs a Redis connection's errors (a refused password names itself here, not in the failing
 * command): each message once until another one comes, so an outage's reconnection attempts
 * every second do not flood the log.
 */
function connectionErrorLog(): (err: Error) => void {
  let last = "";
  return (err) => {
    if (err.message === last) return;
    last = err.message;
    logger.warn(`Redis connection: ${err.message}`);
  };
}

/**
 * Loads the proxies file (PROXIES_FILE; the sample pool on the embedded store) into its pool, in
 * chunks, so a large file never blocks Redis for long; `why` goes in the log line.
 */
export function proxiesLoader(opts: {
  settings: Settings;
  opened: OpenedStore;
  /** Told of the proxies new to the pool (the health checker probes them at once: G9). */
  onAdded?: (pool: string, ids: readonly string[]) => void;
}): (why: string) => Promise<void> {
  const { settings, opened } = opts;
  const file = settings.proxiesFile !== "" ? settings.proxiesFile : opened.kind === "embedded" ? SAMPLE_POOL : "";
  return async (why) => {
    if (file === "") return;
    const specs = await loadProxiesFile(file);
    let added = 0;
    let updated = 0;
    for (let i = 0; i < specs.length; i += PROXIES_FILE_CHUNK) {
      const r = await opened.store.addProxies(settings.proxiesPool, specs.slice(i, i + PROXIES_FILE_CHUNK));
      added += r.added.length;
      updated += r.updated.length;
      if (r.added.length > 0) opts.onAdded?.(settings.proxiesPool, r.added);
    }
    log(`${why}: loaded ${file} into pool ${settings.proxiesPool}: ${added} added, ${updated} updated`);
  };
}
