/** Domain names of a scenario: `site-00.bench.example`, … */
export function domainNames(count: number): string[] {
  const width = String(count - 1).length;
  return Array.from({ length: count }, (_, i) => `site-${String(i).padStart(width, "0")}.bench.example`);
}
