import CircuitBreaker from "opossum";
import type { BreakerOptions } from "./options.js";
import { isBrokerFailure } from "./errors.js";

/** The breaker's state, as events and the `proxybroker_sdk_breaker_state` metric report it. */
export type BreakerState = "closed" | "open" | "halfOpen";

type Call = () => Promise<unknown>;

/**
 * The opossum circuit breaker around every broker call. Expected answers (no proxy available,
 * invalid argument, lost lease: RESOURCE_EXHAUSTED, INVALID_ARGUMENT, ABORTED, NOT_FOUND) are
 * not failures (`errorFilter`); UNAVAILABLE, deadline exceeded and connection failures are.
 */
export class BrokerBreaker {
  private readonly breaker: CircuitBreaker<[Call], unknown>;

  constructor(opts: Required<BreakerOptions> & { onState: (state: BreakerState) => void }) {
    this.breaker = new CircuitBreaker<[Call], unknown>((call: Call) => call(), {
      timeout: false,
      errorThresholdPercentage: opts.errorThresholdPercentage,
      volumeThreshold: opts.volumeThreshold,
      resetTimeout: opts.resetTimeoutMs,
      rollingCountTimeout: opts.rollingCountTimeoutMs,
      errorFilter: (err: unknown) => !isBrokerFailure(err),
    });
    this.breaker.on("open", () => opts.onState("open"));
    this.breaker.on("halfOpen", () => opts.onState("halfOpen"));
    this.breaker.on("close", () => opts.onState("closed"));
  }

  /** Run a broker call through the breaker; rejects with code EOPENBREAKER while open. */
  fire<T>(call: () => Promise<T>): Promise<T> {
    return this.breaker.fire(call) as Promise<T>;
  }

  /** Open the breaker now (the broker is known to be gone); it half-opens after the reset timeout. */
  trip(): void {
    this.breaker.open();
  }

  get state(): BreakerState {
    return this.breaker.opened ? "open" : this.breaker.halfOpen ? "halfOpen" : "closed";
  }

  shutdown(): void {
    this.breaker.shutdown();
  }
}

/** True for the breaker's own rejection while open. */
export function isOpenBreaker(err: unknown): boolean {
  return typeof err === "object" && err !== null && "code" in err && err.code === "EOPENBREAKER";
}
