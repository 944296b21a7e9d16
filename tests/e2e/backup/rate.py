#!/usr/bin/env python3
"""Reads relay.py's log and prints, for the bytes on the wire:
    TOTAL MAX_1S_WINDOW_AFTER_FIRST_SECOND AVERAGE_RATE
The window slides over every logged block (each start point), so the maximum is
the largest number of bytes seen in any interval of one second that starts at
least one second after the first byte. Test code only.
"""
import sys

pts = []
for line in open(sys.argv[1]):
    t, n = line.split()
    pts.append((float(t), int(n)))
if not pts:
    print("0 0 0")
    sys.exit(0)
pts.sort()
t0 = pts[0][0]
total = sum(n for _, n in pts)
best = 0
j = 0
acc = 0
start = [p for p in pts if p[0] >= t0 + 1.0]
# Two pointers over the blocks after the first second.
for i in range(len(start)):
    while j < len(start) and start[j][0] < start[i][0] + 1.0:
        acc += start[j][1]
        j += 1
    best = max(best, acc)
    acc -= start[i][1]
dur = pts[-1][0] - t0
print(total, best, int(total / dur) if dur > 0 else 0)
