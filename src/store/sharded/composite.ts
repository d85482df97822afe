/**
 * The values a sharded pool answers for the whole pool, made of one value per shard: its epoch,
 * its policy version and its event cursor. Callers treat them as opaque strings; each shard gets
 * back its own part. A value of another shape (another shard count, an unsharded store) gives
 * every shard a part that matches nothing, so that the shard answers as it would to a stranger.
 */

const JOIN = "+";
/** A part that equals no epoch, version or stream id of a shard. */
const FOREIGN = "?";

/** The pool's epoch: every shard's, or "" while one of them has none (the broker then creates them). */
export function joinEpochs(epochs: readonly string[]): string {
  return epochs.some((e) => e === "") ? "" : epochs.join(JOIN);
}

/** Each shard's part of a pool epoch ("" = none known: "" for every shard). */
export function splitEpoch(epoch: string, shards: number): string[] {
  if (epoch === "") return new Array<string>(shards).fill("");
  const parts = epoch.split(JOIN);
  return parts.length === shards ? parts : new Array<string>(shards).fill(FOREIGN);
}

/** A shard's policy version `<epoch>.<counter>` in its two parts. */
function versionParts(version: string): [epoch: string, counter: string] {
  const at = version.lastIndexOf(".");
  return at < 0 ? [FOREIGN, FOREIGN] : [version.slice(0, at), version.slice(at + 1)];
}

/**
 * The pool's policy version: `<pool epoch>.<counter>`, the counter written once when every
 * shard has the same (the policies are written to every shard), else every shard's.
 */
export function joinVersions(versions: readonly string[]): string {
  const parts = versions.map(versionParts);
  const counters = parts.map(([, c]) => c);
  const counter = counters.every((c) => c === counters[0]) ? (counters[0] ?? "0") : counters.join(JOIN);
  return `${joinEpochs(parts.map(([e]) => e))}.${counter}`;
}

/** Each shard's part of a pool policy version. */
export function splitVersion(version: string, shards: number): string[] {
  const [epoch, counter] = versionParts(version);
  const epochs = splitEpoch(epoch, shards);
  const counters = counter.includes(JOIN) ? counter.split(JOIN) : new Array<string>(shards).fill(counter);
  if (counters.length !== shards) return new Array<string>(shards).fill(FOREIGN);
  return epochs.map((e, i) => `${e}.${counters[i] ?? FOREIGN}`);
}

/** The pool's event cursor: every shard's. */
export function joinCursors(cursors: readonly string[]): string {
  return cursors.join(JOIN);
}

/** Each shard's part of a pool event cursor: "" (from the oldest) and "$" (new only) for all alike. */
export function splitCursor(cursor: string, shards: number): string[] {
  if (cursor === "" || cursor === "$") return new Array<string>(shards).fill(cursor);
  const parts = cursor.split(JOIN);
  return parts.length === shards ? parts : new Array<string>(shards).fill("$");
}
