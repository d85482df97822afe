/**
 * Exit codes of the `proxybroker` command, for scripts: 0 done; 1 failed (the broker could not be
 * reached, a call failed); 2 bad usage (an unknown command, option or value); 3 done in part (some
 * entries were rejected or not found: the output says which).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, partial: 3 } as const;

/** Ends a command with an exit code and a message for stderr. */
export class CliExit extends Error {
  override readonly name = "CliExit";
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A gRPC failure as a CLI failure (exit 1, the status and its message). */
export function fromRpc(err: unknown): CliExit {
  if (err instanceof CliExit) return err;
  if (typeof err === "object" && err !== null && "code" in err && "details" in err) {
    const e = err as { code: number; details: string };
    const names: Record<number, string> = {
      2: "UNKNOWN",
      3: "INVALID_ARGUMENT",
      4: "DEADLINE_EXCEEDED",
      5: "NOT_FOUND",
      7: "PERMISSION_DENIED",
      8: "RESOURCE_EXHAUSTED",
      9: "FAILED_PRECONDITION",
      13: "INTERNAL",
      14: "UNAVAILABLE",
      16: "UNAUTHENTICATED",
    };
    return new CliExit(e.code === 3 ? EXIT.usage : EXIT.failed, `broker: ${names[e.code] ?? e.code}: ${e.details}`);
  }
  return new CliExit(EXIT.failed, err instanceof Error ? err.message : String(err));
}
