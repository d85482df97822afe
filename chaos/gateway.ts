/**
 * The chaos run's `proxybroker gateway` (with gateway workers): one process in front of both
 * broker replicas, as a sidecar per machine would be, with the SDK's fallback pool inside; the
 * `gateway-kill` fault SIGKILLs it and starts it again on the same address.
 */
import { startGatewayProcess } from "../crawl/gateway-process.js";
import type { GatewayProcess } from "../crawl/gateway-process.js";

export interface ChaosGateway {
  /** `127.0.0.1:port`, the same across restarts. */
  readonly address: string;
  /** Everything every process of it printed. */
  output(): string;
  /** SIGKILL, then start again on the same address after `downMs`. */
  killAndRestart(downMs: number): Promise<{ readonly target: string; readonly detail: string }>;
  stop(): Promise<void>;
}

export async function startChaosGateway(brokers: readonly string[]): Promise<ChaosGateway> {
  const target = brokers.join(",");
  let proc: GatewayProcess = await startGatewayProcess(target);
  const address = proc.address;
  let earlier = "";
  return {
    address,
    output: () => earlier + proc.output(),
    async killAndRestart(downMs) {
      proc.signal("SIGKILL");
      await proc.exited();
      earlier += proc.output();
      await new Promise((r) => setTimeout(r, downMs));
      proc = await startGatewayProcess(target, { address });
      return { target: `gateway ${address}`, detail: `SIGKILL, restarted after ${downMs} ms` };
    },
    stop: () => proc.stop(),
  };
}
