import type { MinuteCounts } from "./minute-counts.js";
import type { RecentRestrictions } from "./recent-restrictions.js";

/** What this broker counts for GetDomainStats and the status page. */
export interface BrokerCounts {
  readonly grantsByDomain: MinuteCounts;
  readonly grantsByWorker: MinuteCounts;
  readonly outcomes: MinuteCounts;
  readonly restrictions: RecentRestrictions;
}
