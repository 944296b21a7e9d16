import { describe, expect, it } from "vitest";
import { bucketStart, buckets, unitFor } from "../../src/buckets";

// One snapshot a day at 02:38 local time, newest first as the server sends them.
function daily(first: string, n: number, keepEvery = 0) {
  const t0 = Date.parse(first + "T00:00:00Z");
  const out = [];
  for (let i = n - 1; i >= 0; i--) {
    const day = new Date(t0 + i * 86400000).toISOString().slice(0, 10);
    out.push({ local: `${day}T02:38:03+02:00`, keep: keepEvery > 0 && i % keepEvery === 0, suspicious: false });
  }
  return out;
}

describe("unitFor", () => {
  it("days up to 62 days, weeks up to 62 weeks, then months", () => {
    expect(unitFor("2026-01-01", "2026-03-03")).toBe("day"); // 62 days
    expect(unitFor("2026-01-01", "2026-03-04")).toBe("week");
    expect(unitFor("2025-11-01", "2026-12-04")).toBe("week"); // 400 days
    expect(unitFor("2025-01-01", "2026-12-04")).toBe("month");
    expect(unitFor("2026-05-05", "2026-05-05")).toBe("day");
  });
});

describe("bucketStart", () => {
  it("weeks start on Monday, across a year's end", () => {
    expect(bucketStart("2026-03-29", "week")).toBe("2026-03-23"); // a Sunday
    expect(bucketStart("2026-03-23", "week")).toBe("2026-03-23"); // a Monday
    expect(bucketStart("2027-01-01", "week")).toBe("2026-12-28");
    expect(bucketStart("2026-03-29", "month")).toBe("2026-03-01");
    expect(bucketStart("2026-03-29", "day")).toBe("2026-03-29");
  });
});

describe("buckets", () => {
  it("400 daily snapshots: 58 weeks, every snapshot counted once", () => {
    const snaps = daily("2025-10-31", 400, 30);
    const cols = buckets(snaps, unitFor("2025-10-31", "2026-12-04"));
    expect(cols.length).toBe(58);
    expect(cols.reduce((s, c) => s + c.total, 0)).toBe(400);
    expect(cols.reduce((s, c) => s + c.kept, 0)).toBe(snaps.filter((s) => s.keep).length);
    expect(cols[0].start).toBe("2025-10-27");
    expect(cols[1].total).toBe(7);
  });
  it("the local date decides, not the UTC one", () => {
    const cols = buckets([{ local: "2026-03-30T01:00:00+03:00", keep: true }], "week");
    expect(cols).toEqual([{ start: "2026-03-30", total: 1, kept: 1, suspicious: 0 }]);
  });
  it("a gap stays as empty columns; months roll over the year", () => {
    const cols = buckets(
      [
        { local: "2027-02-10T00:00:00Z", keep: true, suspicious: true },
        { local: "2026-11-02T00:00:00Z", keep: false },
      ],
      "month",
    );
    expect(cols.map((c) => [c.start, c.total, c.suspicious])).toEqual([
      ["2026-11-01", 1, 0],
      ["2026-12-01", 0, 0],
      ["2027-01-01", 0, 0],
      ["2027-02-01", 1, 1],
    ]);
  });
  it("no snapshots, no columns", () => {
    expect(buckets([], "day")).toEqual([]);
  });
});
