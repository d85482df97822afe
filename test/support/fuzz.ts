/**
 * Test helper: hostile protobuf input, from a seeded random source — messages of a schema with
 * random field values (every field kind, strings from empty to 20,000 characters, numbers at
 * their extremes, negative durations), raw random bytes, and valid encodings mutated byte by
 * byte. Used by the hostile-input tests; the same seed gives the same inputs.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import type { DescField, DescMessage, MessageShape } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";

export type Random = () => number;

const WORDS = [
  "",
  "*",
  "default",
  "shop.example.com",
  "http://x.example/p",
  "10.0.0.1:3128",
  "a=b",
  "..",
  "[::1]",
  "xn--",
  "\u0000",
  "ü.example",
  " ",
  "\n",
];

function int(r: Random, lo: number, hi: number): number {
  return lo + Math.floor(r() * (hi - lo + 1));
}

function pick<T>(r: Random, items: readonly T[]): T {
  return items[int(r, 0, items.length - 1)]!;
}

/** A string as an attacker would send it: a familiar word, random characters, or a very long one. */
export function randomString(r: Random): string {
  const roll = r();
  if (roll < 0.4) return pick(r, WORDS);
  if (roll < 0.9) {
    let s = "";
    const n = int(r, 1, 64);
    for (let i = 0; i < n; i++) s += String.fromCharCode(r() < 0.8 ? int(r, 0x20, 0x7e) : int(r, 0, 0xd7ff));
    return s;
  }
  return pick(r, ["a", "x.", "\u00e9", "%"]).repeat(int(r, 300, 20_000));
}

function randomScalar(r: Random, type: ScalarType): unknown {
  switch (type) {
    case ScalarType.STRING:
      return randomString(r);
    case ScalarType.BYTES:
      return randomBytes(r, int(r, 0, 64));
    case ScalarType.BOOL:
      return r() < 0.5;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return pick(r, [0, -1, 1e308, -1e308, Number.NaN, Number.POSITIVE_INFINITY, r() * 1e6]);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return pick(r, [0n, -1n, 1n, 9_223_372_036_854_775_807n, -9_223_372_036_854_775_808n, BigInt(int(r, -1e9, 1e9))]);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return pick(r, [0n, 1n, 18_446_744_073_709_551_615n, BigInt(int(r, 0, 1e9))]);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return pick(r, [0, 1, 4_294_967_295, int(r, 0, 1e6)]);
    default:
      return pick(r, [0, -1, 1, 2_147_483_647, -2_147_483_648, int(r, -1e6, 1e6)]);
  }
}

function randomEnum(r: Random, values: readonly { number: number }[]): number {
  return r() < 0.8 ? pick(r, values).number : int(r, -5, 1_000);
}

type Init = Record<string, unknown>;

function randomFieldValue(r: Random, field: DescField, depth: number): unknown {
  switch (field.fieldKind) {
    case "scalar":
      return randomScalar(r, field.scalar);
    case "enum":
      return randomEnum(r, field.enum.values);
    case "message":
      return randomInit(r, field.message, depth + 1);
    case "list": {
      const n = r() < 0.9 ? int(r, 0, 4) : int(r, 50, 400);
      return Array.from({ length: n }, () =>
        field.listKind === "scalar"
          ? randomScalar(r, field.scalar)
          : field.listKind === "enum"
            ? randomEnum(r, field.enum.values)
            : randomInit(r, field.message, depth + 1),
      );
    }
    case "map": {
      const out: Record<string, unknown> = {};
      const n = r() < 0.9 ? int(r, 0, 4) : int(r, 40, 200);
      for (let i = 0; i < n; i++) {
        const key = field.mapKey === ScalarType.STRING ? `${randomString(r).slice(0, 300)}${i}` : String(int(r, 0, 1e6));
        out[key] =
          field.mapKind === "scalar"
            ? randomScalar(r, field.scalar)
            : field.mapKind === "enum"
              ? randomEnum(r, field.enum.values)
              : randomInit(r, field.message, depth + 1);
      }
      return out;
    }
  }
}

function randomInit(r: Random, desc: DescMessage, depth: number): Init {
  const init: Init = {};
  if (depth > 3) return init;
  for (const member of desc.members) {
    if (member.kind === "oneof") {
      if (r() < 0.85) {
        const f = pick(r, member.fields);
        init[member.localName] = { case: f.localName, value: randomFieldValue(r, f, depth) };
      }
      continue;
    }
    if (r() < 0.35) continue;
    init[member.localName] = randomFieldValue(r, member, depth);
  }
  return init;
}

/** A message of `schema` whose fields hold random values (each field set or not at random). */
export function randomMessage<D extends DescMessage>(r: Random, schema: D): MessageShape<D> {
  return create(schema, randomInit(r, schema, 0) as Parameters<typeof create<D>>[1]);
}

/** `n` random bytes. */
export function randomBytes(r: Random, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = int(r, 0, 255);
  return out;
}

/** A valid encoding of a random message of `schema` with a few bytes flipped, cut or inserted. */
export function mutatedFrame(r: Random, schema: DescMessage): Uint8Array {
  const valid = Array.from(toBinary(schema, randomMessage(r, schema)));
  const edits = int(r, 1, 4);
  for (let i = 0; i < edits && valid.length > 0; i++) {
    const at = int(r, 0, valid.length - 1);
    const roll = r();
    if (roll < 0.5) valid[at] = int(r, 0, 255);
    else if (roll < 0.75) valid.splice(at, int(r, 1, 8));
    else valid.splice(at, 0, ...randomBytes(r, int(r, 1, 8)));
  }
  return Uint8Array.from(valid);
}
