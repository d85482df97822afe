import { createLogger } from "../../observe/log.js";

/** The broker process's log (pino JSON lines; LOG_LEVEL). */
export const logger = createLogger();

/** One line at level info. */
export function log(message: string): void {
  logger.info(message);
}

/** One line at level warn. */
export function warn(message: string): void {
  logger.warn(message);
}

/** Say why the process cannot start, and exit with status 2. */
export function refuseToStart(reason: string): never {
  logger.fatal(`refusing to start: ${reason}`);
  process.exit(2);
}

/** An error's message, for a log line. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
