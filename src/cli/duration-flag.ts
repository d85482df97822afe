/** A duration flag (`--min-interval 2s`) as a protobuf Duration; a bad value is a usage error. */
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { Duration } from "@bufbuild/protobuf/wkt";
import { CliExit, EXIT } from "./exit.js";
import { parseDuration } from "./format.js";

/** The value of `--<name>` as a Duration; undefined when the flag is not given. */
export function durationFlag(name: string, text: string | undefined): Duration | undefined {
  if (text === undefined) return undefined;
  try {
    return durationFromMs(parseDuration(text));
  } catch (err) {
    throw new CliExit(EXIT.usage, `--${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
