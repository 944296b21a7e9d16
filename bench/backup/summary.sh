#!/usr/bin/env bash
# Prints bench/backup's table and checks issue 12's targets against the faster
# restic: bench/backup/summary.sh RESULTS [GEN]. RESULTS has bench_run's lines
# (label wall_s cpu_s peak_rss_kib requests put_bytes deletes vgw_cpu_s vgw_share
# status); GEN, when given, "gen1 FILES BYTES" and "gen10 FILES BYTES".
set -euo pipefail
results=$1
gen=${2:-/dev/null}
[[ -f $gen ]] || gen=/dev/null
awk -v genfile="$gen" '
BEGIN { while ((getline line < genfile) > 0) { split(line, f, " "); g[f[1]] = f[2] } }
{ wall[$1] = $2; cpu[$1] = $3; rss[$1] = $4; req[$1] = $5; put[$1] = $6; share[$1] = $9; st[$1] = $10 }
function row(l) {
	if (!(l in wall)) return
	printf "| %-16s | %7.2f | %7.2f | %7.1f | %8d | %9.1f | %5.1f%% |%s\n", l, wall[l], cpu[l],
		rss[l] / 1024, req[l], put[l] / 1e6, share[l] * 100, st[l] ? " exit " st[l] : ""
}
function verdict(ok) { return ok ? "met" : "NOT met" }
END {
	print "| run              |  wall s |   CPU s | RSS MiB | requests | upload MB | vgw   |"
	print "|------------------|--------:|--------:|--------:|---------:|----------:|------:|"
	n = split("first rerun restore", ph)
	for (i = 1; i <= n; i++)
		for (j = 1; j <= 3; j++) row(substr("r014 r018 lode", 5 * j - 4, 4) "-" ph[i])
	for (k = 1; k <= 2; k++)
		for (gg = 1; gg <= 2; gg++)
			for (i = 1; i <= 2; i++) row((k == 1 ? "r018" : "lode") "-gen" (gg == 1 ? "1" : "10") "-" ph[i])
	print ""
	split("0.6 0.5 0.8", target)
	for (i = 1; i <= n; i++) {
		a = "r014-" ph[i]; b = "r018-" ph[i]; l = "lode-" ph[i]
		if (!(a in wall) || !(b in wall)) continue
		best = wall[a] < wall[b] ? a : b
		if (!(l in wall) || st[l]) { printf "%s: lode not measured (faster restic: %s, %.2f s)\n", ph[i], best, wall[best]; continue }
		r = wall[l] / wall[best]
		printf "%s: lode %.2f s / %s %.2f s = %.2fx (target <= %sx: %s); CPU %.2f s / %.2f s = %.2fx\n", ph[i],
			wall[l], best, wall[best], r, target[i], verdict(r <= target[i] + 0), cpu[l], cpu[best], cpu[l] / cpu[best]
	}
	m = 0; have = 0
	for (i = 1; i <= n; i++) if (("lode-" ph[i]) in rss) { have = 1; if (rss["lode-" ph[i]] > m) m = rss["lode-" ph[i]] }
	if (have) printf "peak RSS: lode %.1f MiB at most (target <= 64 MiB: %s)\n", m / 1024, verdict(m <= 65536)
	if (("gen1" in g) && ("gen10" in g)) {
		for (k = 1; k <= 2; k++) {
			t = k == 1 ? "r018" : "lode"
			for (i = 1; i <= 2; i++) {
				a = t "-gen1-" ph[i]; b = t "-gen10-" ph[i]
				if (!(a in rss) || !(b in rss) || st[a] || st[b]) continue
				per = (rss[b] - rss[a]) * 1024 / (g["gen10"] - g["gen1"])
				printf "memory per file, %s %s: (%.1f - %.1f MiB) / (%d - %d files) = %.1f B/file%s\n", t, ph[i],
					rss[b] / 1024, rss[a] / 1024, g["gen10"], g["gen1"], per,
					t == "lode" ? " (target <= 64 B/file: " verdict(per <= 64) ")" : ""
			}
		}
	}
}' "$results"
