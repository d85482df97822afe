/** One health-check pass as the admin surface runs it (ProxyAdmin.CheckProxies). */

/** Progress of a health-check pass: after each proxy, and once at the start with `total`. */
export interface CheckProgressUpdate {
  readonly total: number;
  readonly checked: number;
  readonly passed: number;
  readonly failed: number;
  readonly errors: number;
  readonly proxyId: string;
  readonly result: "" | "pass" | "fail" | "error";
}

/** Run one health-check pass over `pool` now. */
export type HealthPass = (pool: string, onProgress: (p: CheckProgressUpdate) => void, signal: AbortSignal) => Promise<CheckProgressUpdate>;
