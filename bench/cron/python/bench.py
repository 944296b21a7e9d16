"""The croniter side of the cron next-run benchmark (bench/cron/run.sh).

    python3 bench.py CASES STARTS OUT [BUDGET_MS]

Debian's python3-croniter (1.3.5). For each case the iterator is built once; each
next run is set_current(start) and get_next(). A pass stops after BUDGET_MS
(default 1000) or when every start has been used; after one untimed warm-up pass,
ns per next run is the best of 3 passes, as for every engine. Answers of the
warm-up pass go to OUT/croniter.<i>.txt. Times are the CPU time of the process, as for every engine.
"""
import sys
import time
from datetime import datetime
from zoneinfo import ZoneInfo

from croniter import croniter

cases_path, starts_path, out = sys.argv[1:4]
budget = float(sys.argv[4]) / 1000 if len(sys.argv) > 4 else 1.0
starts = [int(x) for x in open(starts_path).read().split()]
for i, line in enumerate(l for l in open(cases_path).read().split('\n') if l):
    expr, zone = line.split('\t')
    tz = ZoneInfo(zone)
    it = croniter(expr, datetime.fromtimestamp(starts[0], tz))
    answers, passes = [], []
    for r in range(4):
        n, t0 = 0, time.process_time()
        while n < len(starts) and (n < 20 or time.process_time() - t0 < budget):
            it.set_current(datetime.fromtimestamp(starts[n], tz))
            try:
                nxt = int(it.get_next(float))
            except Exception:  # noqa: BLE001 - a failure is an answer that differs
                nxt = 'error'
            if r == 0:
                answers.append(nxt)
            n += 1
        if r > 0:
            passes.append((time.process_time() - t0) / n * 1e9)
    passes.sort()
    print(f"{i}\t{passes[0]:.1f}\t{len(answers)}", flush=True)
    with open(f"{out}/croniter.{i}.txt", "w") as f:
        f.write('\n'.join(str(a) for a in answers) + '\n')
