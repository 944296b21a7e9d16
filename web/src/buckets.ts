// The retention timeline's columns (docs/ui.md): snapshots counted per day, week
// or month of their local date (the schedule's zone, as retention counts), so 400
// or 3,000 snapshots read as a few dozen columns with numbers rather than a smear
// of overlapping marks. Pure: no DOM.

export interface Snap {
  local: string; // "2026-03-29T04:07:12+03:00"
  keep: boolean;
  suspicious?: boolean;
}

export type Unit = "day" | "week" | "month";

export interface Bucket {
  start: string; // the first day: "2026-03-23"
  total: number;
  kept: number;
  suspicious: number;
}

// Days up to 62 (about two months) are shown one column a day, up to 62 weeks one
// a week, longer spans one a month: never more than about 62 columns but for
// histories of more than five years.
export function unitFor(firstDay: string, lastDay: string): Unit {
  const span = (dayNumber(lastDay) - dayNumber(firstDay)) / 86400000 + 1;
  return span <= 62 ? "day" : span <= 62 * 7 ? "week" : "month";
}

function dayNumber(day: string): number {
  return Date.UTC(Number(day.slice(0, 4)), Number(day.slice(5, 7)) - 1, Number(day.slice(8, 10)));
}

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

// The first day of the column a local date falls in; weeks start on Monday.
export function bucketStart(day: string, unit: Unit): string {
  if (unit === "day") return day;
  if (unit === "month") return day.slice(0, 8) + "01";
  const ms = dayNumber(day);
  const monday = (new Date(ms).getUTCDay() + 6) % 7;
  return isoDay(ms - monday * 86400000);
}

function next(start: string, unit: Unit): string {
  if (unit === "day") return isoDay(dayNumber(start) + 86400000);
  if (unit === "week") return isoDay(dayNumber(start) + 7 * 86400000);
  const y = Number(start.slice(0, 4));
  const m = Number(start.slice(5, 7));
  return m === 12 ? `${y + 1}-01-01` : `${y}-${String(m + 1).padStart(2, "0")}-01`;
}

// Every column from the oldest snapshot's to the newest's, oldest first; a column
// without snapshots is kept, so the gaps in a history stay visible.
export function buckets(snaps: Snap[], unit: Unit): Bucket[] {
  if (snaps.length === 0) return [];
  const days = snaps.map((s) => s.local.slice(0, 10));
  const sorted = [...days].sort();
  const byStart = new Map<string, Bucket>();
  const last = bucketStart(sorted[sorted.length - 1], unit);
  const out: Bucket[] = [];
  for (let b = bucketStart(sorted[0], unit); b <= last; b = next(b, unit)) {
    const bucket = { start: b, total: 0, kept: 0, suspicious: 0 };
    byStart.set(b, bucket);
    out.push(bucket);
  }
  snaps.forEach((s, i) => {
    const bucket = byStart.get(bucketStart(days[i], unit))!;
    bucket.total++;
    if (s.keep) bucket.kept++;
    if (s.suspicious) bucket.suspicious++;
  });
  return out;
}
