import type { StorePolicies } from "@proxybroker/sdk/engine";

/** How long a pool's policy version read from the store is reused. */
const KEEP_MS = 1_000;

/**
 * The version of each pool's policies as the store has it (a policy set through any replica
 * counts at once), read at most once a second per pool however many workers ask: every
 * membership refresh of every worker carries it (`GetPoolSnapshotResponse.policy_version`).
 */
export class PolicyVersions {
  private readonly read = new Map<string, { readonly at: number; readonly version: Promise<string> }>();

  constructor(
    private readonly store: Pick<StorePolicies, "listPolicies">,
    private readonly clock: () => number,
  ) {}

  of(pool: string): Promise<string> {
    const now = this.clock();
    const known = this.read.get(pool);
    if (known !== undefined && now - known.at < KEEP_MS) return known.version;
    const version = this.store.listPolicies(pool).then((s) => s.version);
    // a failed read is not kept
    version.catch(() => this.read.delete(pool));
    this.read.set(pool, { at: now, version });
    return version;
  }
}
