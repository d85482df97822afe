/** A proxy as a store lists it, for tests that build snapshots by hand: `id` and defaults, `over` replacing fields. */
import type { ProxyView } from "@proxybroker/sdk/model";

export function proxyView(id: string, over: Partial<ProxyView> = {}): ProxyView {
  return {
    id,
    url: `http://${id}`,
    tier: "",
    labels: {},
    score: 50,
    state: "ACTIVE",
    latencyEwmaMs: 100,
    successCount: 0,
    failureCount: 0,
    lastUsedBy: "",
    lastUsedAt: 0,
    quarantineUntil: 0,
    quarantineCount: 0,
    exitIp: "",
    ...over,
  };
}
