/**
 * The crawl harness's partition mode on hand-made reports and site logs: pages per second for the
 * fleet and the cut worker, the seconds without a page (the gate counts those after the first page
 * only), the speed before the cut and from 8 s after it and their ratio (gated only with a bound),
 * 429s, bans and overlaps after the cut, the first fallback page of the cut worker, the efficiency
 * after the cut; bans replayed from the log as the sites count them; the settings read and checked.
 */
import { describe, expect, it } from "vitest";
import { banTimes } from "../../crawl/bans.js";
import { partitionTimeline } from "../../crawl/partition.js";
import type { PartitionInput } from "../../crawl/partition.js";
import { checkPartition, readPartition } from "../../crawl/partition-options.js";
import { formatPartition, partitionGateFailures } from "../../crawl/partition-report.js";
import type { RequestLogEntry } from "../../crawl/sites.js";
import type { FetchReport } from "../../crawl/workers/common.js";

const START = 1_000_000;
const CUT = "proxybroker-0";
const OTHER = "proxybroker-1";
const SITE = "127.0.1.1:4001";
const IP = "127.0.0.10";

let n = 0;
function page(worker: string, atMs: number, extra: Partial<FetchReport> = {}): FetchReport {
  n += 1;
  return { t: START + atMs, url: `http://site/page/${n}`, proxy: "p", status: 200, accepted: true, real: true, worker, ...extra };
}

function entry(atMs: number, answer: RequestLogEntry["answer"], durMs = 5, ip = IP): RequestLogEntry {
  return { site: SITE, ip, start: START + atMs, end: START + atMs + durMs, answer };
}

/** A 20 s window, the cut at 5 s. */
function input(reports: readonly FetchReport[], extra: Partial<PartitionInput> = {}): PartitionInput {
  return {
    reports,
    log: [],
    bans: [],
    worker: CUT,
    cutAt: START + 5_000,
    startAt: START,
    endAt: START + 20_000,
    proxies: 1,
    siteIntervalsMs: [1000],
    ...extra,
  };
}

/** Both workers take a page every second before the cut, the other one only after it, with a gap at 7–8 s. */
function scenario(): FetchReport[] {
  const out: FetchReport[] = [];
  for (let s = 0; s < 5; s++) out.push(page(CUT, s * 1000 + 100), page(OTHER, s * 1000 + 200));
  for (let s = 5; s < 20; s++) if (s !== 7 && s !== 8) out.push(page(OTHER, s * 1000 + 300));
  return out;
}

describe("partitionTimeline", () => {
  it("counts pages per second for the fleet and the cut worker, and the seconds without a page", () => {
    const t = partitionTimeline(input(scenario()));
    expect(t.perSecond).toEqual([2, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
    expect(t.cutWorkerPerSecond).toEqual([1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(t.emptySeconds).toEqual([7, 8]);
    expect(t.firstPageSecond).toBe(0);
    expect(t.cutAtS).toBe(5);
  });

  it("compares the fleet's pages/s from 8 s after the cut with before it", () => {
    const t = partitionTimeline(input(scenario()));
    expect(t.before).toMatchObject({ seconds: 5, pages: 10, pagesPerSecond: 2, cutWorkerPages: 5, otherPages: 5 });
    expect(t.settled).toMatchObject({ seconds: 7, pages: 7, pagesPerSecond: 1, cutWorkerPages: 0, otherPages: 7 });
    expect(t.ratio).toBe(0.5);
  });

  it("measures the efficiency after the cut against theoreticalMaxPerMinute", () => {
    // 13 pages in the 15 s after the cut = 52 pages/min; 1 proxy × 1 site of 1000 ms = 60/min
    const t = partitionTimeline(input(scenario()));
    expect(t.pagesPerMinuteAfterCut).toBeCloseTo(52);
    expect(t.efficiencyAfterCut).toBeCloseTo(52 / 60);
  });

  it("takes the cut worker's first page through its fallback pool after the cut, and only that", () => {
    const reports = [
      ...scenario(),
      page(CUT, 4_000, { source: "fallback" }),
      page(OTHER, 5_100, { source: "fallback" }),
      page(CUT, 6_000, { source: "broker" }),
      page(CUT, 6_500, { source: "fallback", real: false }),
      page(CUT, 9_250, { source: "fallback" }),
      page(CUT, 12_000, { source: "fallback" }),
    ];
    expect(partitionTimeline(input(reports)).firstFallbackPageMs).toBe(4_250);
    expect(partitionTimeline(input(scenario())).firstFallbackPageMs).toBeUndefined();
  });

  it("counts 429s, bans and overlaps in the window and after the cut", () => {
    const log = [entry(1_000, "429"), entry(6_000, "429"), entry(6_002, "page"), entry(9_000, "page", 5, "127.0.0.11")];
    const t = partitionTimeline(input(scenario(), { log, bans: [START + 1_000, START + 6_000, START + 25_000] }));
    expect(t.window).toEqual({ rateLimited: 2, bans: 2, overlaps: 1 });
    expect(t.afterCut).toEqual({ rateLimited: 1, bans: 1, overlaps: 1 });
  });

  it("has no settled stretch nor ratio when the window ends within 8 s of the cut, nor a ratio without pages before it", () => {
    const late = partitionTimeline(input(scenario(), { cutAt: START + 15_000 }));
    expect(late.settled).toBeUndefined();
    expect(late.ratio).toBeUndefined();
    const early = partitionTimeline(input([page(OTHER, 10_000)], { cutAt: START + 2_000 }));
    expect(early.ratio).toBeUndefined();
    expect(early.emptySeconds).toHaveLength(19);
    expect(early.firstPageSecond).toBe(10);
  });
});

describe("partitionGateFailures", () => {
  it("fails on a second without a page after the first page, not before it", () => {
    const t = partitionTimeline(input(scenario().filter((r) => r.t >= START + 2_000)));
    expect(t.emptySeconds).toEqual([0, 1, 7, 8]);
    expect(partitionGateFailures(t, 0)).toEqual(["2 seconds without a page after the first page (at 7, 8 s)"]);
  });

  it("checks the ratio only with a bound", () => {
    const t = partitionTimeline(input(scenario()));
    expect(partitionGateFailures(t, 0)).toHaveLength(1);
    expect(partitionGateFailures(t, 0.5)).toHaveLength(1);
    expect(partitionGateFailures(t, 0.8)).toContain("pages/s from 8 s after the partition 0.50× of before it (at least 0.8×)");
  });

  it("passes a run without gaps that kept its speed", () => {
    const steady = Array.from({ length: 20 }, (_, s) => page(s < 5 ? CUT : OTHER, s * 1000 + 10));
    expect(partitionGateFailures(partitionTimeline(input(steady)), 0.9)).toEqual([]);
    const timeline = partitionTimeline(input(steady));
    expect(partitionGateFailures(timeline, 0, timeline.efficiencyAfterCut + 0.01)).toEqual([
      `efficiency after the partition ${timeline.efficiencyAfterCut.toFixed(2)} (at least ${timeline.efficiencyAfterCut + 0.01})`,
    ]);
    expect(partitionGateFailures(timeline, 0, timeline.efficiencyAfterCut)).toEqual([]);
  });

  it("prints the timeline with the cut marked", () => {
    const text = formatPartition(partitionTimeline(input(scenario())));
    expect(text).toContain("2 2 2 2 2 | 1 1 0 0 1");
    expect(text).toContain("seconds without a page: 2 (at 7, 8 s; 2 of them after the first page of the window)");
    expect(text).toContain("first page of proxybroker-0 through its fallback pool after the cut: none");
  });
});

describe("banTimes", () => {
  const rule = { violationsToBan: 3, violationWindowMs: 60_000 };

  it("bans at the third 429 of an IP at a site within the window, and counts again from there", () => {
    const log = [0, 100, 200, 300, 400, 500, 600].map((t) => entry(t, "429"));
    expect(banTimes(log, () => rule)).toEqual([START + 200, START + 500]);
  });

  it("forgets violations older than the window, and counts per IP and site", () => {
    const log = [entry(0, "429"), entry(100, "429"), entry(60_100, "429"), entry(60_200, "429", 5, "127.0.0.11"), entry(60_300, "429")];
    expect(banTimes(log, () => rule)).toEqual([]);
    expect(banTimes([...log, entry(60_400, "429")], () => rule)).toEqual([START + 60_400]);
  });

  it("ignores sites without a rule and answers that are not 429", () => {
    const log = [entry(0, "429"), entry(1, "block"), entry(2, "429"), entry(3, "captcha"), entry(4, "429")];
    expect(banTimes(log, () => undefined)).toEqual([]);
    expect(banTimes(log, () => rule)).toEqual([START + 4]);
  });
});

describe("readPartition and checkPartition", () => {
  const run = { seconds: 30, workers: 2, pythonWorkers: 0, proxybroker: true, crash: false };

  it("is off unset or at 0, and defaults to the first TypeScript worker without a ratio bound", () => {
    expect(readPartition({})).toBeUndefined();
    expect(readPartition({ CRAWL_PARTITION_AT_S: "0" })).toBeUndefined();
    expect(readPartition({ CRAWL_PARTITION_AT_S: "8" })).toEqual({ atMs: 8_000, language: "ts", index: 0, minRatio: 0, minEfficiency: 0 });
    expect(readPartition({ CRAWL_PARTITION_AT_S: "8", CRAWL_PARTITION_WORKER: "py-0", CRAWL_PARTITION_MIN_RATIO: "0.8" })).toEqual({
      atMs: 8_000,
      language: "py",
      index: 0,
      minRatio: 0.8,
      minEfficiency: 0,
    });
  });

  it("rejects bad values and a run the partition does not fit", () => {
    expect(() => readPartition({ CRAWL_PARTITION_AT_S: "x" })).toThrow(/CRAWL_PARTITION_AT_S/);
    expect(() => readPartition({ CRAWL_PARTITION_AT_S: "8", CRAWL_PARTITION_WORKER: "go-0" })).toThrow(/CRAWL_PARTITION_WORKER/);
    const p = readPartition({ CRAWL_PARTITION_AT_S: "8", CRAWL_PARTITION_WORKER: "py-0" });
    if (p === undefined) throw new Error("expected a partition");
    expect(() => checkPartition(p, run)).toThrow(/runs 0 Python workers/);
    expect(() => checkPartition(p, { ...run, pythonWorkers: 1 })).not.toThrow();
    expect(() => checkPartition({ ...p, language: "ts" }, { ...run, proxybroker: false })).toThrow(/proxybroker/);
    expect(() => checkPartition({ ...p, language: "ts" }, { ...run, crash: true })).toThrow(/one chaos mode/);
    expect(() => checkPartition({ ...p, language: "ts", atMs: 30_000 }, run)).toThrow(/inside the window/);
    expect(() => checkPartition({ ...p, language: "ts", atMs: 25_000, minRatio: 0.8 }, run)).toThrow(/8 s after/);
  });
});
