#!/usr/bin/env python3
"""Converts the robot runs of Kolakowski's "BLE RSS dataset for
fingerprinting radio map calibration" (a furnished flat in Warsaw; GitHub
marckolak/ble-rss-fingerprints-calib2021, CC BY 4.0) into `earshot rooms
evaluate` input (docs/rooms.md, "Real houses"). Standard library only; it
fetches nothing: give it a clone of that repository.

    scripts/rooms-real/flat.py DATASET_DIR OUT_DIR [--every S]

A tag on a robot (1.3 m up, five packets a second) drives through the flat
while six anchors (anchors.csv) measure the RSSI they hear it at; the
robot's position (x, y, metres) comes from its LiDAR. The preprocessed
files hold a row every 1/3 s: calibration/calibration_df.csv (four runs)
and tests/test_robot_df.csv (one run; there rows where an anchor heard
nothing were dropped), each with ts (ns), x, y and rssi_1 ... rssi_6
(empty: not heard in that slot).

The dataset names no rooms. Its floor plan (layout.csv, the figure in
description/figs) has four, told apart here by walls at y = 2.1 m, x = 2.64 m
(upper left) and x = 3.96 m (lower right):

    west      x < 2.64, y >= 2.1   anchor 2
    east      x >= 2.64, y >= 2.1  anchors 1, 4, 6 (an L-shaped open room)
    corridor  x < 3.96, y < 2.1    anchor 3
    south     x >= 3.96, y < 2.1   anchor 5

An anchor's room is where anchors.csv puts it. Each room becomes one
capture (named after it); a room with several anchors reports, per slot,
the strongest of them (a receiver with several antennas). Each report is
an iBeacon advertising report (major 100 + the run's number, minor 1) at
the RSSI rounded to a dB. truth.jsonl is the room of the robot's position
at each row, and `unlabelled` (no capture's room: not scored) from a third
of a second after a run's last row. A run ends where rows stop for over a
minute. OUT_DIR/group-calibration holds the four calibration runs, and
OUT_DIR/group-test-robot the test run, each one evaluate directory (run N
is also in OUT_DIR/run-N). --every S keeps one report in S seconds of each
room (a sparse receiver).
"""

import argparse
import csv
import json
import os

from sphere import UUID, btsnoop_record, concatenate, ibeacon, report_event

ANCHORS = 6
SLOT = 1 / 3  # seconds between two rows
RUN_GAP = 60.0


def room_of(x, y):
    if y >= 2.1:
        return "west" if x < 2.64 else "east"
    return "corridor" if x < 3.96 else "south"


def read_anchors(path):
    rooms = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                rooms[int(row["id"])] = room_of(float(row["x"]), float(row["y"]))
            except (KeyError, TypeError, ValueError):
                raise SystemExit(f"{path}: not the dataset's anchors.csv (id,x,y,z)")
    if sorted(rooms) != list(range(1, ANCHORS + 1)):
        raise SystemExit(f"{path}: expected anchors 1-{ANCHORS}")
    return rooms


def read_rows(path, anchors):
    """(t, room, {room: strongest rssi}) per row; malformed rows counted."""
    out = []
    skipped = 0
    with open(path, newline="") as f:
        rows = csv.DictReader(f)
        names = rows.fieldnames or []
        if not {"ts", "x", "y"} <= set(names) or f"rssi_{ANCHORS}" not in names:
            raise SystemExit(f"{path}: not one of the dataset's *_df.csv (ts, x, y, rssi_1..6)")
        for row in rows:
            try:
                t = float(row["ts"]) / 1e9
                where = room_of(float(row["x"]), float(row["y"]))
                heard = {}
                for a, room in anchors.items():
                    if row[f"rssi_{a}"]:
                        rssi = int(round(float(row[f"rssi_{a}"])))
                        heard[room] = max(rssi, heard.get(room, -128))
            except (TypeError, ValueError):
                skipped += 1
                continue
            out.append((t, where, heard))
    out.sort(key=lambda r: r[0])
    return out, skipped


def runs(rows):
    """Rows split where they stop for over RUN_GAP seconds."""
    out = []
    for row in rows:
        if not out or row[0] - out[-1][-1][0] > RUN_GAP:
            out.append([])
        out[-1].append(row)
    return out


def write_run(out_dir, number, rows, rooms, every):
    os.makedirs(out_dir, exist_ok=True)
    data = ibeacon(100 + number, 1)
    address = bytes([number & 0xFF, 1, 0, 0, 0x5E, 0xC0])  # static random, LSB first
    counts = {}
    for room in rooms:
        records = []
        last = None
        for t, _, heard in rows:
            if room in heard and (last is None or t - last >= every):
                records.append(btsnoop_record(report_event(address, data, heard[room]), t))
                last = t
        with open(os.path.join(out_dir, room + ".btsnoop"), "wb") as f:
            f.write(b"btsnoop\0" + (1).to_bytes(4, "big") + (1002).to_bytes(4, "big"))
            f.writelines(records)
        counts[room] = len(records)
    beacon = f"{UUID}:{100 + number}:1"
    truth = []
    for t, where, _ in rows:
        if not truth or truth[-1][1] != where:
            truth.append((t, where))
    truth.append((rows[-1][0] + SLOT, "unlabelled"))
    with open(os.path.join(out_dir, "truth.jsonl"), "w") as f:
        for t, room in truth:
            f.write(json.dumps({"t": round(t, 3), "beacon": beacon, "room": room},
                               separators=(",", ":")) + "\n")
    return counts, len(truth)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", help="a clone of marckolak/ble-rss-fingerprints-calib2021")
    p.add_argument("out", help="directory to write the evaluate directories into")
    p.add_argument("--every", type=float, default=0,
                   help="keep one report in S seconds of each room (a sparse receiver)")
    a = p.parse_args()
    anchors = read_anchors(os.path.join(a.dataset, "anchors.csv"))
    rooms = sorted(set(anchors.values()))
    number = 0
    for group, path in [("group-calibration", "calibration/calibration_df.csv"),
                        ("group-test-robot", "tests/test_robot_df.csv")]:
        rows, skipped = read_rows(os.path.join(a.dataset, path), anchors)
        if not rows:
            raise SystemExit(f"{path}: no rows")
        parts = []
        for run in runs(rows):
            number += 1
            name = f"run-{number}"
            counts, lines = write_run(os.path.join(a.out, name), number, run, rooms, a.every)
            heard = ", ".join(f"{r} {n}" for r, n in counts.items())
            print(f"{name} ({path}): {run[-1][0] - run[0][0]:.0f} s; {heard} reports; "
                  f"{lines} truth lines")
            parts.append(name)
        if skipped:
            print(f"{path}: {skipped} malformed rows skipped")
        concatenate(a.out, group, parts, rooms)
        print(f"{group}: {', '.join(parts)}")


if __name__ == "__main__":
    main()
