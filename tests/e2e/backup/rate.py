#!/usr/bin/env python3
"""Reads relay.py's log and prints, for the bytes on the wire:
    TOTAL MAX_1S_WINDOW MAX_3S_WINDOW AVERAGE_RATE
Each window slides over every logged block (each start point) and starts at least
one second after the first byte, so the maximum is the largest number of bytes seen
in any interval of that length after the start-up burst. The times are those at
which the relay read the bytes: a relay descheduled for a moment reads what the
kernel buffered meanwhile in one go, which moves bytes between neighbouring
windows. The longer window is the one that bounds the sender's pacing; the 1 s
window shows the bursts. Test code only.
"""
import sys

pts = []
for line in open(sys.argv[1]):
    t, n = line.split()
    pts.append((float(t), int(n)))
if not pts:
    print("0 0 0 0")
    sys.exit(0)
pts.sort()
t0 = pts[0][0]
total = sum(n for _, n in pts)
start = [p for p in pts if p[0] >= t0 + 1.0]


def busiest(width):
    # Two pointers over the blocks after the first second.
    best = acc = j = 0
    for i in range(len(start)):
        while j < len(start) and start[j][0] < start[i][0] + width:
            acc += start[j][1]
            j += 1
        best = max(best, acc)
        acc -= start[i][1]
    return best


dur = pts[-1][0] - t0
print(total, busiest(1.0), busiest(3.0), int(total / dur) if dur > 0 else 0)
