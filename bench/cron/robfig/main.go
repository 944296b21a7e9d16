// The robfig/cron v3 side of the cron next-run benchmark (bench/cron/run.sh):
// the engine of the Kubernetes CronJob controller, timed on the same cases and
// start instants as the C side.
//
//	robfig-bench run CASES STARTS OUT   ns per Next() for each case (best of 7 passes); answers in OUT/robfig.<i>.txt
//	robfig-bench entries N              recompute N (policy, host) next run times, as bench_cron does
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"
)

func fail(err error) {
	fmt.Fprintln(os.Stderr, "robfig-bench:", err)
	os.Exit(2)
}

func readLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if s.Text() != "" {
			lines = append(lines, s.Text())
		}
	}
	return lines
}

func schedule(expr, zone string) cron.Schedule {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		fail(err)
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		fail(err)
	}
	s.(*cron.SpecSchedule).Location = loc
	return s
}

// cpuNanos is the CPU time of the process (user and system, every thread, the
// garbage collector's too): on a shared machine the time spent waiting for a core
// is not the engine's cost. Every engine of the benchmark is timed this way.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// The best pass: on a shared machine a disturbance only adds time (as bench_cron.c).
func best(v []float64) float64 {
	sort.Float64s(v)
	return v[0]
}

func run(casesPath, startsPath, out string) {
	var starts []time.Time
	for _, l := range readLines(startsPath) {
		v, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			fail(err)
		}
		starts = append(starts, time.Unix(v, 0).UTC())
	}
	for i, c := range readLines(casesPath) {
		parts := strings.SplitN(c, "\t", 2)
		s := schedule(parts[0], parts[1])
		// Warm-up, and enough rounds over the starts for a pass of about 20 ms.
		var sum int64
		t0 := cpuNanos()
		for _, t := range starts {
			sum += s.Next(t).Unix()
		}
		rounds := int(20e6/float64(cpuNanos()-t0+1)) + 1
		passes := make([]float64, 7)
		for r := range passes {
			t0 := cpuNanos()
			for k := 0; k < rounds; k++ {
				for _, t := range starts {
					sum += s.Next(t).Unix()
				}
			}
			passes[r] = float64(cpuNanos()-t0) / float64(len(starts)*rounds)
		}
		fmt.Printf("%d\t%.1f\t%d\n", i, best(passes), sum&0xff)
		f, err := os.Create(fmt.Sprintf("%s/robfig.%d.txt", out, i))
		if err != nil {
			fail(err)
		}
		w := bufio.NewWriter(f)
		for _, t := range starts {
			fmt.Fprintln(w, s.Next(t).Unix())
		}
		w.Flush()
		f.Close()
	}
}

var exprs = []string{"30 2 * * *", "0 3 * * *", "*/15 * * * *", "@hourly", "30 2 * * 0",
	"0 */6 * * *", "45 23 * * 1-5", "0 0 1 * *"}
var zones = []string{"Europe/Kyiv", "America/New_York", "Europe/Berlin", "Australia/Sydney",
	"America/Los_Angeles", "Europe/London", "America/Chicago", "Pacific/Auckland",
	"America/Santiago", "Australia/Lord_Howe", "Europe/Dublin", "America/Havana",
	"Asia/Beirut", "Atlantic/Azores", "America/Toronto", "Antarctica/Troll"}

// The jitter offset of SPEC section 3, so both sides recompute the same entries.
func offset(ns, name, host string, jitter uint64) int64 {
	h := sha256.Sum256([]byte("lodestore-jitter\x00" + ns + "/" + name + "\x00" + host))
	return int64(binary.BigEndian.Uint64(h[:8]) % jitter)
}

func entries(n int) {
	const npol = 1000
	hosts := n / npol
	t0 := cpuNanos()
	scheds := make([]cron.Schedule, npol)
	for p := range scheds {
		scheds[p] = schedule(exprs[p%8], zones[p%16])
	}
	offsets := make([]int64, n)
	for i := range offsets {
		offsets[i] = offset("default", fmt.Sprintf("policy-%d", i/hosts), fmt.Sprintf("node-%d", i%hosts), 900)
	}
	initMs := float64(cpuNanos()-t0) / 1e6
	now := int64(1780272000) // 2026-06-01T00:00:00Z
	next := make([]int64, n)
	passes := make([]float64, 7)
	for r := 0; r <= 7; r++ {
		t := cpuNanos()
		for i := 0; i < n; i++ {
			next[i] = scheds[i/hosts].Next(time.Unix(now-offsets[i], 0)).Unix() + offsets[i]
		}
		if r > 0 {
			passes[r-1] = float64(cpuNanos()-t) / 1e6
		}
	}
	fmt.Printf("entries\t%d\t%.2f\t%.1f\t%d\n", n, best(passes), initMs, next[n-1]&0xff)
	for i := 0; i < n && i < 5; i++ {
		fmt.Fprintf(os.Stderr, "entry %d next run %d\n", i, next[i])
	}
}

func main() {
	switch {
	case len(os.Args) == 5 && os.Args[1] == "run":
		run(os.Args[2], os.Args[3], os.Args[4])
	case len(os.Args) == 3 && os.Args[1] == "entries":
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fail(err)
		}
		entries(n)
	default:
		fmt.Fprintln(os.Stderr, "usage: robfig-bench run CASES STARTS OUT | entries N")
		os.Exit(2)
	}
}
