/**
 * The gateway's answer to SIGTERM and SIGINT: the first starts a graceful stop; another one later
 * than `sameWithinMs` after it cuts every connection now. One within that second is the same
 * shutdown: `npx proxybroker gateway` signalled as a process group (docker stop, systemd's default
 * KillMode) gets the signal from npx and from the shell at once, a millisecond apart.
 */
export interface ShutdownSignals {
  /** A signal arrived: what it means. */
  signal(): "stop" | "same" | "cut";
}

export function shutdownSignals(o: { readonly sameWithinMs: number; readonly clock?: () => number }): ShutdownSignals {
  const clock = o.clock ?? Date.now;
  let first: number | undefined;
  return {
    signal() {
      const now = clock();
      if (first === undefined) {
        first = now;
        return "stop";
      }
      return now - first < o.sameWithinMs ? "same" : "cut";
    },
  };
}
