/** Wait `ms` milliseconds (after a failed acquire, and for the measurement windows). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
