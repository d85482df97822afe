/**
 * `Retry-After` (RFC 9110 §10.2.3): delta-seconds or an HTTP-date (IMF-fixdate, or the obsolete
 * RFC 850 and asctime forms), turned into milliseconds from an injected `now`.
 */

const MONTHS: Readonly<Record<string, number>> = {
  jan: 0,
  feb: 1,
  mar: 2,
  apr: 3,
  may: 4,
  jun: 5,
  jul: 6,
  aug: 7,
  sep: 8,
  oct: 9,
  nov: 10,
  dec: 11,
};
const MON = "(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)";
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
/** `Sun, 06 Nov 1994 08:49:37 GMT` */
const IMF_FIXDATE = new RegExp(`^(?:mon|tue|wed|thu|fri|sat|sun), (\\d{2}) ${MON} (\\d{4}) ${TIME} gmt$`, "i");
/** `Sunday, 06-Nov-94 08:49:37 GMT` */
const RFC_850 = new RegExp(`^(?:mon|tues|wednes|thurs|fri|satur|sun)day, (\\d{2})-${MON}-(\\d{2}) ${TIME} gmt$`, "i");
/** `Sun Nov  6 08:49:37 1994` */
const ASCTIME = new RegExp(`^(?:mon|tue|wed|thu|fri|sat|sun) ${MON} ( \\d|\\d{2}) ${TIME} (\\d{4})$`, "i");

function utc(year: number, month: number, day: number, h: number, m: number, s: number): number | undefined {
  if (h > 23 || m > 59 || s > 60 || day < 1) return undefined;
  const t = Date.UTC(year, month, day, h, m, Math.min(s, 59));
  // Date.UTC rolls 31 Feb over into March: reject dates that do not exist.
  return new Date(t).getUTCDate() === day ? t : undefined;
}

/** The month number of a matched month name (the regexes only match known names). */
function monthOf(name: string | undefined): number {
  return MONTHS[(name ?? "").toLowerCase()] ?? Number.NaN;
}

/** Epoch ms of an HTTP-date, or undefined when `value` is not one. */
export function parseHttpDate(value: string, now: number): number | undefined {
  let m = IMF_FIXDATE.exec(value);
  if (m) return utc(Number(m[3]), monthOf(m[2]), Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = RFC_850.exec(value);
  if (m) {
    // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
    let year = 2000 + Number(m[3]);
    if (year > new Date(now).getUTCFullYear() + 50) year -= 100;
    return utc(year, monthOf(m[2]), Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  }
  m = ASCTIME.exec(value);
  if (m) return utc(Number(m[6]), monthOf(m[1]), Number((m[2] ?? "").trim()), Number(m[3]), Number(m[4]), Number(m[5]));
  return undefined;
}

/**
 * Milliseconds to wait according to a `Retry-After` value, measured from `now` (epoch ms).
 * A date in the past gives 0; a missing or invalid value gives undefined.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) {
    const ms = Number(v) * 1000;
    return Number.isFinite(ms) ? ms : undefined;
  }
  const at = parseHttpDate(v, now);
  return at === undefined ? undefined : Math.max(0, at - now);
}
