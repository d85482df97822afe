/**
 * Expected markers in a body. This is a textual check, not a DOM parse:
 *
 * - plain text: the body contains it, case-insensitively (`text:` forces text, e.g. `text:#1`);
 * - `#id`, `.class`, `.a.b`: some start tag has `id="id"` / a `class` attribute holding every
 *   class token;
 * - `css:tag`, `css:tag.class`, `css:tag#id.class`: some `<tag …>` start tag with those attributes
 *   (a bare word is text, so a tag selector needs the `css:` prefix).
 *
 * Start tags are found with a regular expression; a `>` inside a quoted attribute value, tags in
 * comments or scripts, and markup built by JavaScript are not understood.
 */

/** A marker after parsing. */
export type ParsedMarker =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "selector"; readonly tag?: string; readonly id?: string; readonly classes: readonly string[] };

const NAME = "[A-Za-z_-][\\w-]*";
const SHORTHAND = new RegExp(`^(?:[#.]${NAME})+$`);
const SELECTOR = new RegExp(`^([A-Za-z][A-Za-z0-9-]*)?((?:[#.]${NAME})*)$`);
const PART = new RegExp(`[#.]${NAME}`, "g");
const START_TAG = /<([A-Za-z][\w:-]*)(\s[^>]*)?>/g;

function parseSelector(marker: string, source: string): ParsedMarker {
  const m = SELECTOR.exec(source);
  if (!m || source === "") throw new RangeError(`marker "${marker}" is not a selector of the form tag, #id, .class, tag#id.class`);
  const parts = m[2] === undefined ? [] : (m[2].match(PART) ?? []);
  const ids = parts.filter((p) => p.startsWith("#")).map((p) => p.slice(1));
  if (ids.length > 1) throw new RangeError(`marker "${marker}" names more than one id`);
  return {
    kind: "selector",
    ...(m[1] === undefined ? {} : { tag: m[1].toLowerCase() }),
    ...(ids[0] === undefined ? {} : { id: ids[0] }),
    classes: parts.filter((p) => p.startsWith(".")).map((p) => p.slice(1)),
  };
}

/** Parse a marker; throws RangeError for an empty marker or a malformed `css:` selector. */
export function parseMarker(marker: string): ParsedMarker {
  if (marker.startsWith("text:")) {
    const text = marker.slice(5);
    if (text === "") throw new RangeError(`marker "${marker}" is empty`);
    return { kind: "text", text: text.toLowerCase() };
  }
  if (marker.startsWith("css:")) return parseSelector(marker, marker.slice(4).trim());
  if (SHORTHAND.test(marker)) return parseSelector(marker, marker);
  if (marker.trim() === "") throw new RangeError("a marker must not be empty");
  return { kind: "text", text: marker.toLowerCase() };
}

/** The value of attribute `name` in a start tag's attribute text, if present. */
function attribute(attrs: string, name: string): string | undefined {
  const re = new RegExp(`(?:^|\\s)${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s"'=<>\`]+))`, "i");
  const m = re.exec(attrs);
  return m === null ? undefined : (m[1] ?? m[2] ?? m[3]);
}

function selectorPresent(body: string, sel: Extract<ParsedMarker, { kind: "selector" }>): boolean {
  START_TAG.lastIndex = 0;
  for (let m = START_TAG.exec(body); m !== null; m = START_TAG.exec(body)) {
    if (sel.tag !== undefined && m[1]!.toLowerCase() !== sel.tag) continue;
    const attrs = m[2] ?? "";
    if (sel.id !== undefined && attribute(attrs, "id")?.trim() !== sel.id) continue;
    if (sel.classes.length > 0) {
      const tokens = (attribute(attrs, "class") ?? "").split(/\s+/);
      if (!sel.classes.every((c) => tokens.includes(c))) continue;
    }
    return true;
  }
  return false;
}

/** The first marker not found in `body`, if any. `lower` is `body` lowercased when known. */
export function findMissingMarker(body: string, markers: readonly string[], lower?: string): string | undefined {
  let lowered = lower;
  for (const marker of markers) {
    const parsed = parseMarker(marker);
    if (parsed.kind === "text") {
      lowered ??= body.toLowerCase();
      if (!lowered.includes(parsed.text)) return marker;
    } else if (!selectorPresent(body, parsed)) {
      return marker;
    }
  }
  return undefined;
}
