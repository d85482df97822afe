/**
 * CHAOS_ISOLATION as an operator carries it out: a domain policy per site naming the isolation
 * group (`ProxyAdmin.SetDomainPolicy`, nothing else set: exclusive, not paced, as without one), set
 * once the brokers loaded the proxies and before the workers start, and set again after every
 * FLUSHALL — the policies go with the data, and the brokers only put the proxies back (from
 * PROXIES_FILE). At the end, the policies as `ListDomainPolicies` lists them, for the checker.
 */
import { onAnyReplica } from "./any-replica.js";
import type { Replica } from "./cluster.js";
import type { ListedPolicy } from "./cross-site.js";

/** The pool of the run (PROXIES_POOL's default, the workers' pool). */
const POOL = "default";
const DEADLINE_MS = 3_000;

/** One time the harness set the group's policies. */
export interface PolicySetting {
  /** `start`, or `after FLUSHALL`. */
  readonly why: string;
  /** Epoch ms of what took the policies away (the FLUSHALL sent); absent at the start. */
  readonly lostAt?: number;
  /** Epoch ms: the first call went out; the last one was answered. */
  readonly at: number;
  readonly doneAt: number;
}

export class GroupPolicies {
  readonly settings: PolicySetting[] = [];

  constructor(
    private readonly opts: {
      readonly replicas: readonly Replica[];
      /** Domain-keys of the sites (their hosts): one exact pattern each. */
      readonly domains: readonly string[];
      readonly group: string;
    },
  ) {}

  /** Set every site's policy (on whichever replica answers); resolves once every one was answered. */
  async set(why: string, lostAt?: number): Promise<PolicySetting> {
    const at = Date.now();
    for (const pattern of this.opts.domains) {
      await onAnyReplica(this.opts.replicas, (r) =>
        r.admin.setDomainPolicy({ pool: POOL, policy: { pattern, isolationGroup: this.opts.group } }, { deadline: DEADLINE_MS }),
      );
    }
    const setting: PolicySetting = { why, at, doneAt: Date.now(), ...(lostAt === undefined ? {} : { lostAt }) };
    this.settings.push(setting);
    return setting;
  }
}

/** The pool's policies as ListDomainPolicies lists them. */
export async function listPolicies(replicas: readonly Replica[]): Promise<ListedPolicy[]> {
  const res = await onAnyReplica(replicas, (r) => r.admin.listDomainPolicies({ pool: POOL }, { deadline: DEADLINE_MS }));
  return res.policies.map((p) => ({ pattern: p.pattern, isolationGroup: p.isolationGroup }));
}
