/**
 * The worker's fallback claim on its way to the broker (docs/spec.md §7). After every list the
 * fallback pool says what it would claim; when that differs from the claim in use, a new claim
 * (a new version) goes out with every ping until a pong acknowledges it, and only then is used.
 * At most one claim waits for its acknowledgement: the broker keeps the latest two claims it
 * received, so the one in use is always among them, and it reserves both while the worker is
 * silent. A claim made while none is in use (a process's first, unless a snapshot file gave it
 * the one it had) goes out `fresh`: the broker then forgets the claims it recorded before under
 * this worker id — a predecessor's, which nothing uses — instead of reserving them.
 */
import type { ClaimedKey, FallbackClaim } from "../model/fallback-claim.js";

/** What the fallback pool would claim now (undefined: claims are not in use). */
export type ClaimCandidate = { readonly members: readonly string[]; readonly keys: readonly ClaimedKey[] } | undefined;

export interface ClaimSyncOptions {
  readonly candidate: () => ClaimCandidate;
  /** The claim in use (acknowledged). */
  readonly inUse: () => FallbackClaim | undefined;
  /** Use an acknowledged claim. */
  readonly use: (claim: FallbackClaim) => Promise<void>;
  /** A new claim waits to be sent: send it now rather than with the next periodic ping. */
  readonly onWaiting?: () => void;
  /** Epoch ms (versions grow with it across restarts of the process). */
  readonly clock: () => number;
}

export class ClaimSync {
  private waiting: FallbackClaim | undefined;
  private waitingFresh = false;
  private lastVersion = 0;

  constructor(private readonly opts: ClaimSyncOptions) {}

  /** The lists changed: a new claim waits to be sent when the candidate says more or other than the one in use. */
  update(): void {
    if (this.waiting !== undefined) return; // looked at again once it is acknowledged
    const candidate = this.opts.candidate();
    if (candidate === undefined) return;
    const inUse = this.opts.inUse();
    if (inUse !== undefined && covers(inUse, candidate, this.opts.clock())) return;
    this.waiting = { version: this.nextVersion(), members: candidate.members, keys: candidate.keys };
    this.waitingFresh = inUse === undefined;
    this.opts.onWaiting?.();
  }

  /** The claim the next ping carries (undefined: none waits). */
  get toSend(): FallbackClaim | undefined {
    return this.waiting;
  }

  /** The claim that waits was made while none was in use: the broker forgets those before it. */
  get fresh(): boolean {
    return this.waiting !== undefined && this.waitingFresh;
  }

  /** A pong acknowledged claim `version` (0: none). */
  async acknowledged(version: number): Promise<void> {
    const claim = this.waiting;
    if (claim === undefined || version !== claim.version) return;
    this.waiting = undefined;
    await this.opts.use(claim);
    this.update();
  }

  /** Above every earlier one, of this process and (by the clock) of earlier ones. */
  private nextVersion(): number {
    this.lastVersion = Math.max(this.lastVersion + 1, Math.floor(this.opts.clock()) * 1_000);
    return this.lastVersion;
  }
}

/**
 * Whether `inUse` says what `candidate` says: the same members, the same keys served the same
 * way, and each key's end no less than halfway to the candidate's (a listing's end moves on with
 * every lease: a claim is sent again only once it would run out before long).
 */
function covers(inUse: FallbackClaim, candidate: NonNullable<ClaimCandidate>, now: number): boolean {
  if (inUse.members.length !== candidate.members.length || inUse.members.some((m, i) => m !== candidate.members[i])) return false;
  if (inUse.keys.length !== candidate.keys.length) return false;
  return candidate.keys.every((k, i) => {
    const had = inUse.keys[i];
    if (had === undefined || had.domainKey !== k.domainKey || had.shareKey !== k.shareKey || had.whole !== k.whole) return false;
    return had.untilMs >= k.untilMs || had.untilMs - now >= (k.untilMs - now) / 2;
  });
}
