/**
 * The broker's log: pino JSON lines on stderr, level from LOG_LEVEL (info by default; debug adds a
 * line per lease call with its request id). Every message and string field passes through the
 * password redaction (user:***@host), so no proxy password ever reaches the log.
 */
import { pino } from "pino";
import type { DestinationStream, Logger } from "pino";
import { redactSecrets } from "../security/redact.js";
import { logLevel } from "../config/log-level.js";

function redactValue(v: unknown): unknown {
  if (typeof v === "string") return redactSecrets(v);
  if (Array.isArray(v)) return v.map(redactValue);
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redactValue(x)]));
  return v;
}

export interface LoggerOptions {
  /** Where LOG_LEVEL is read; default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where the lines go; default stderr (synchronously, so a line before exit is not lost). */
  readonly destination?: DestinationStream;
}

/** The process's logger. */
export function createLogger({ env = process.env, destination }: LoggerOptions = {}): Logger {
  const { level } = logLevel(env);
  return pino(
    {
      level,
      base: { service: "proxybroker", pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: (obj) => redactValue(obj) as Record<string, unknown> },
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === "string" ? redactSecrets(a) : a)) as Parameters<typeof method>);
        },
      },
    },
    destination ?? pino.destination({ dest: 2, sync: true }),
  );
}
