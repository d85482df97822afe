/**
 * Labels as the Redis store keeps them: one string per proxy, "\n" followed by "k=v\n" for each
 * label in key order, with "%", "=" and line breaks escaped, so that a script checks a wanted
 * label with one plain substring search for "\nk=v\n" (no JSON on the hot path).
 */

function escapeLabel(s: string): string {
  return s.replace(/[%=\n\r]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0").toUpperCase()}`);
}

function unescapeLabel(s: string): string {
  return s.replace(/%([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

function sortedEntries(labels: Readonly<Record<string, string>>): Array<[string, string]> {
  return Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The stored form of `labels`. */
export function encodeLabels(labels: Readonly<Record<string, string>>): string {
  let out = "\n";
  for (const [k, v] of sortedEntries(labels)) out += `${escapeLabel(k)}=${escapeLabel(v)}\n`;
  return out;
}

/** The needles a script searches for, one per wanted label. */
export function labelNeedles(labels: Readonly<Record<string, string>>): string[] {
  return sortedEntries(labels).map(([k, v]) => `\n${escapeLabel(k)}=${escapeLabel(v)}\n`);
}

/** Labels from their stored form. */
export function decodeLabels(stored: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const line of stored.split("\n")) {
    if (line === "") continue;
    const eq = line.indexOf("=");
    if (eq < 0) continue;
    labels[unescapeLabel(line.slice(0, eq))] = unescapeLabel(line.slice(eq + 1));
  }
  return labels;
}
