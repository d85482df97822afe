/** The broker process (`npm start`, `proxybroker serve`). */
import { log, serve } from "./server/serve.js";

serve().catch((err: unknown) => {
  log(`failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
