#!/usr/bin/env python3
"""How real links fade during stays: the figures the simulated fading
houses' `shadowing` and `shadowing_time` can be held against (docs/rooms.md,
"How real links fade"). Standard library only; it fetches nothing.

    scripts/rooms-real/fades.py TRAIN_DIR [--stay S] [--window W]

TRAIN_DIR holds SPHERE challenge 2016 training sequences (00001 ...), as
for scripts/rooms-real/sphere.py. For every labelled stay of at least S
seconds (90) in a room with a gateway (kitchen, living, study), and every
gateway that heard the tag at least every 2 s on average in it, the
gateway's W-second mean (5, the rule's window) is taken each second from
10 s into the stay to its end. Printed per link: its mean level, the
standard deviation of those means about it (the slow fading the window
does not average out, plus the person moving in the room), and its
correlation time (the first lag, in seconds, at which their
autocorrelation falls below 1/e; "-" if not within 60 s). Then the medians
and ranges, and the lead of the room's own gateway over the best other
one (W-second means): its 1st and 5th percentiles and median, and the
share of seconds it was behind.
"""

import argparse
import csv
import math
import os
import statistics
import sys

ROOM_GATEWAY = {"kitchen": "Kitchen_AP", "living": "Lounge_AP", "study": "Study_AP"}
GATEWAYS = ["Kitchen_AP", "Lounge_AP", "Upstairs_AP", "Study_AP"]


def window_means(points, start, end, window):
    """Each whole second k in [start, end): the mean of the readings in (k - window, k]."""
    out = []
    lo = 0
    for k in range(int(start), int(end)):
        while lo < len(points) and points[lo][0] <= k - window:
            lo += 1
        hi = lo
        total = 0.0
        while hi < len(points) and points[hi][0] <= k:
            total += points[hi][1]
            hi += 1
        out.append(total / (hi - lo) if hi > lo else None)
    return out


def correlation_time(dev, variance):
    for lag in range(1, 61):
        pairs = [
            (dev[i], dev[i + lag])
            for i in range(len(dev) - lag)
            if dev[i] is not None and dev[i + lag] is not None
        ]
        if len(pairs) < 20 or variance <= 0:
            return None
        if sum(a * b for a, b in pairs) / len(pairs) / variance < 1 / math.e:
            return lag
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("train_dir")
    p.add_argument("--stay", type=float, default=90.0, help="shortest stay scored, s (90)")
    p.add_argument("--window", type=float, default=5.0, help="the mean's window, s (5)")
    a = p.parse_args()
    if a.stay < 20 or a.window <= 0:
        sys.exit("fades.py: --stay must be at least 20 s and --window above 0")
    if not os.path.isdir(a.train_dir):
        sys.exit(f"fades.py: {a.train_dir} is not a directory (give the SPHERE training sequences' directory)")
    sequences = sorted(
        s for s in os.listdir(a.train_dir) if os.path.isfile(os.path.join(a.train_dir, s, "acceleration.csv"))
    )
    if not sequences:
        sys.exit(f"fades.py: no SPHERE sequence (NNNNN/acceleration.csv) in {a.train_dir}")
    links = []
    leads = []
    malformed = 0
    for seq in sequences:
        d = os.path.join(a.train_dir, seq)
        heard = {g: [] for g in GATEWAYS}
        with open(os.path.join(d, "acceleration.csv"), newline="") as f:
            for r in csv.DictReader(f):
                try:
                    t = float(r["t"])
                    readings = [(g, float(r[g])) for g in GATEWAYS if r.get(g)]
                except (TypeError, ValueError):
                    malformed += 1
                    continue
                for g, rssi in readings:
                    heard[g].append((t, rssi))
        label_files = sorted(x for x in os.listdir(d) if x.startswith("location_"))
        if not label_files:
            continue
        with open(os.path.join(d, label_files[0]), newline="") as f:
            stays = list(csv.DictReader(f))
        for stay in stays:
            start, end, room = float(stay["start"]), float(stay["end"]), stay["name"]
            if room not in ROOM_GATEWAY or end - start < a.stay:
                continue
            series = {}
            for g in GATEWAYS:
                points = [pt for pt in heard[g] if start + 10 - a.window <= pt[0] <= end]
                if len(points) < 0.5 * (end - start):
                    continue
                series[g] = window_means(points, start + 10, end, a.window)
            for g, means in series.items():
                values = [m for m in means if m is not None]
                if len(values) < 60:
                    continue
                level = sum(values) / len(values)
                dev = [None if m is None else m - level for m in means]
                variance = sum(x * x for x in dev if x is not None) / len(values)
                links.append((seq, room, round(end - start), g, level, math.sqrt(variance), correlation_time(dev, variance)))
            own = ROOM_GATEWAY[room]
            if own in series:
                for i, m in enumerate(series[own]):
                    others = [series[g][i] for g in series if g != own and series[g][i] is not None]
                    if m is not None and others:
                        leads.append(m - max(others))
    if not links:
        sys.exit("fades.py: no stay long enough with a gateway that heard it")
    print("sequence  room     stay s  gateway      level dBm  sd dB  correlation s")
    for seq, room, length, g, level, sd, tau in links:
        print(f"{seq:9} {room:8} {length:6}  {g:12} {level:9.1f}  {sd:5.2f}  {tau if tau else '-':>13}")
    sds = [x[5] for x in links]
    taus = [x[6] for x in links if x[6]]
    print(
        f"{len(links)} links: sd median {statistics.median(sds):.1f} dB ({min(sds):.1f}-{max(sds):.1f}); "
        + (
            f"correlation time median {statistics.median(taus):g} s ({min(taus)}-{max(taus)} s)"
            if taus
            else "no correlation time within 60 s"
        )
        + f", {len(links) - len(taus)} not within 60 s"
    )
    if malformed:
        print(f"{malformed} malformed rows skipped")
    if leads:
        leads.sort()
        behind = sum(1 for x in leads if x < 0) / len(leads)
        print(
            f"own gateway's lead over the best other ({len(leads)} s): 1st percentile "
            f"{leads[len(leads) // 100]:.1f} dB, 5th {leads[len(leads) // 20]:.1f} dB, median "
            f"{statistics.median(leads):.1f} dB, behind {100 * behind:.2f} % of seconds"
        )


if __name__ == "__main__":
    main()
