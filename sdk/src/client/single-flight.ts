/**
 * A background task that never runs twice at once: a call while a run is in progress does nothing
 * (and resolves at once); the next call after the run ended starts a new one.
 */
export function singleFlight(task: () => Promise<void>): () => Promise<void> {
  let running = false;
  return async () => {
    if (running) return;
    running = true;
    try {
      await task();
    } finally {
      running = false;
    }
  };
}
