/** The response expectations of `proxybroker policy set` (flags) and `policy list` (a column). */
import type { Command } from "commander";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ResponseExpectations, ResponseExpectationsSchema } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { CliExit, EXIT } from "./exit.js";

/** The flags as commander hands them over. */
export interface ExpectationFlags {
  readonly blockMarker?: readonly string[];
  readonly requiredMarker?: readonly string[];
  readonly minBytes?: string;
  readonly slowDown?: readonly string[];
}

function collect(value: string, previous: readonly string[] = []): string[] {
  return [...previous, value];
}

/** Add the flags to `policy set`. */
export function expectationOptions(c: Command): Command {
  return c
    .option("--block-marker <text>", "a body containing it is a block page (repeat for more)", collect)
    .option("--required-marker <marker>", "every 2xx body contains it: text, #id, .class, css:tag.class (repeat)", collect)
    .option("--min-bytes <n>", "a 2xx body smaller than this is a placeholder page")
    .option("--slow-down <text>", "a 403 body containing it asks to slow down (repeat)", collect);
}

/** The policy's expectations from the flags; undefined when none is given. Throws CliExit on a bad --min-bytes. */
export function expectationsOf(o: ExpectationFlags): MessageInitShape<typeof ResponseExpectationsSchema> | undefined {
  const minBytes = o.minBytes === undefined ? 0 : Number(o.minBytes);
  if (!Number.isInteger(minBytes) || minBytes < 0) throw new CliExit(EXIT.usage, "--min-bytes must be a whole number of bytes");
  const e = {
    blockMarkers: [...(o.blockMarker ?? [])],
    requiredMarkers: [...(o.requiredMarker ?? [])],
    minBytes,
    slowDownPatterns: [...(o.slowDown ?? [])],
  };
  const none = e.minBytes === 0 && e.blockMarkers.length + e.requiredMarkers.length + e.slowDownPatterns.length === 0;
  return none ? undefined : e;
}

/** One line for `policy list`: what the policy expects of an answer, "-" for nothing. */
export function describeExpectations(e: ResponseExpectations | undefined): string {
  if (e === undefined) return "-";
  const parts = [
    ...e.requiredMarkers.map((m) => `needs ${JSON.stringify(m)}`),
    ...(e.minBytes > 0 ? [`>= ${e.minBytes} B`] : []),
    ...e.blockMarkers.map((m) => `block ${JSON.stringify(m)}`),
    ...e.slowDownPatterns.map((m) => `slow ${JSON.stringify(m)}`),
  ];
  return parts.length === 0 ? "-" : parts.join(", ");
}
