import type { Settings } from "../../config/settings.js";
import { loadTokensFile } from "../../security/tokens-file.js";
import type { TokenTable } from "../../security/tokens.js";
import { log, logger, messageOf, refuseToStart, warn } from "./log.js";

/**
 * The bearer tokens in force: read at start (a bad file refuses to start), read again on SIGHUP
 * (a bad file then keeps the tokens in force). Without AUTH_TOKENS_FILE: none, and a warning.
 */
export async function readTokens(settings: Settings): Promise<() => TokenTable | undefined> {
  const file = settings.authTokensFile;
  if (file === "") {
    warn("WARNING: no AUTH_TOKENS_FILE: anyone who reaches this port can lease proxies, add their own and read proxy passwords");
    return () => undefined;
  }
  let tokens: TokenTable;
  try {
    tokens = await loadTokensFile(file);
  } catch (err) {
    refuseToStart(`AUTH_TOKENS_FILE: ${messageOf(err)}`);
  }
  log(`authentication: ${tokens.size} token(s) from ${file} (SIGHUP reads it again)`);
  process.on("SIGHUP", () => {
    loadTokensFile(file).then(
      (t) => {
        tokens = t;
        log(`SIGHUP: ${t.size} token(s) from ${file}`);
      },
      (err: unknown) => logger.error(`SIGHUP: kept the tokens in force: ${messageOf(err)}`),
    );
  });
  return () => tokens;
}
