/**
 * How far behind the broker's records a worker's lists may be (src/lease/own-listings.ts): a use
 * first recorded at or before the later of these bounds is surely in the latest list a worker
 * holds —
 * - `VIEW_LAG_MS` before its last contact: a worker counts itself alone on a domain-key only with
 *   lists at most 30 s older than its last contact with the broker (MAX_VIEW_LAG_MS, + 5 s);
 * - `LIST_LAG_MS` before the latest list it said it holds (`WorkerSeen.listsAt`): a list shows
 *   every use recorded `LIST_LAG_MS` before it.
 */

/** How much older than a worker's last contact its lists may be when it claims a domain-key alone (+ 5 s). */
export const VIEW_LAG_MS = 35_000;
/**
 * How much older than a list a use may be and still be missing from it: the broker lists the uses
 * it read at most a second before (src/lease/domain-use-cache.ts), and replicas' clocks differ.
 */
export const LIST_LAG_MS = 2_000;
/**
 * How much older than a worker's last contact the policies of its fallback pool may be: it
 * fetches the whole snapshot again as soon as a membership list (at most 30 s apart) shows
 * another policy version.
 */
export const POLICY_LAG_MS = VIEW_LAG_MS;
