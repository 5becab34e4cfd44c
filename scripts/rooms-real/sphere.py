#!/usr/bin/env python3
"""Converts SPHERE challenge 2016 training sequences into `earshot rooms
evaluate` input (docs/rooms.md, "Real houses"). Standard library only; it
fetches nothing: give it the sequences you have.

    scripts/rooms-real/sphere.py TRAIN_DIR OUT_DIR [--annotator N] [--upstairs] [--every S]

TRAIN_DIR holds the sequences (00001 ... 00010), each with acceleration.csv
(the wrist tag's packets and the RSSI each gateway heard them at:
Kitchen_AP, Lounge_AP, Upstairs_AP, Study_AP; empty when a gateway missed
the packet) and location_N.csv (annotator N's room labels). For each
sequence OUT_DIR/NNNNN gets one capture per gateway that heard the tag,
named after its room (kitchen, living, upstairs, study), each packet an LE
advertising report of an iBeacon (major: the sequence number, minor 1) at
the RSSI that gateway heard, and truth.jsonl from the labels.

The truth: the labels as they are (bath, bed1, bed2, hall, kitchen, living,
stairs, study, toilet), a gap between two labels closed by the earlier one
when shorter than 2 s, else the tag is in "unlabelled" (no receiver's room,
so left out of the score), and after the last label too. The landing gateway's room, "upstairs", is no
label, so upstairs time is left out too; --upstairs labels bath, bed1, bed2,
toilet and stairs "upstairs" instead (the upstairs rooms as one).
--every S keeps one report in S seconds of each gateway (the first heard
after the previous kept one plus S), as a sparse receiver would report
(ESPresense nodes and phones: every 5-10 s).
Sequence N starts at 2026-01-01 00:00:00 UTC plus N - 1 hours (its times
are relative), so sequences never overlap and a group of them is scored
together: OUT_DIR/group-FIRST-LAST holds the sequences heard by the same
gateways (1-5, 6 and 7-10 in the training set) in one evaluate directory.
"""

import argparse
import csv
import json
import os
import struct
import sys

BASE = 1767225600.0  # 2026-01-01T00:00:00Z: the sequences' zero.
UUID = "5F4E3D2C-1B0A-4987-8654-3210FEDCBA98"
GATEWAYS = {"Kitchen_AP": "kitchen", "Lounge_AP": "living", "Upstairs_AP": "upstairs",
            "Study_AP": "study"}
UPSTAIRS = {"bath", "bed1", "bed2", "toilet", "stairs"}
BTSNOOP_EPOCH = 0x00DCDDB30F2F8000  # microseconds from year 0 to 1970
PACKET = 0.19  # seconds: the tag sends every 0.2 s, 4 accelerometer rows a packet
GAP = 2.0


def ibeacon(major, minor):
    uuid = bytes.fromhex(UUID.replace("-", ""))
    return (bytes([2, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15]) + uuid
            + struct.pack(">HHb", major, minor, -59))


def report_event(address, data, rssi):
    # LE Meta event, LE Advertising Report, one report: ADV_NONCONN_IND from
    # a random address.
    body = bytes([0x02, 1, 0x03, 0x01]) + address + bytes([len(data)]) + data
    body += struct.pack("b", max(-127, min(20, rssi)))
    return bytes([0x04, 0x3E, len(body)]) + body


def btsnoop_record(packet, seconds):
    micros = int(round(seconds * 1e6)) + BTSNOOP_EPOCH
    return struct.pack(">IIIIQ", len(packet), len(packet), 3, 0, micros) + packet


def read_reports(path):
    """(t, {gateway: rssi}) per packet: a row starts a packet when its
    readings differ from the previous row's or a packet's time has passed."""
    out = []
    skipped = 0
    last_t = None
    last = None
    with open(path, newline="") as f:
        rows = csv.DictReader(f)
        missing = [g for g in GATEWAYS if g not in (rows.fieldnames or [])]
        if "t" not in (rows.fieldnames or []) or len(missing) == len(GATEWAYS):
            raise SystemExit(f"{path}: not a SPHERE acceleration.csv (no t or gateway columns)")
        for row in rows:
            try:
                t = float(row["t"])
                seen = {g: int(round(float(row[g]))) for g in GATEWAYS if row.get(g)}
            except (TypeError, ValueError):
                skipped += 1
                continue
            if last_t is not None and seen == last and t - last_t < PACKET:
                continue
            last_t, last = t, seen
            if seen:
                out.append((t, seen))
    return out, skipped


def read_truth(path, upstairs):
    labels = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                labels.append((float(row["start"]), float(row["end"]), row["name"]))
            except (KeyError, TypeError, ValueError):
                raise SystemExit(f"{path}: not a SPHERE location file (start,end,name,index)")
    labels.sort()
    out = []
    for k, (start, end, name) in enumerate(labels):
        room = "upstairs" if upstairs and name in UPSTAIRS else name
        if not out or out[-1][1] != room:
            out.append((start, room))
        following = labels[k + 1][0] if k + 1 < len(labels) else None
        if following is None or following - end >= GAP:
            out.append((end, "unlabelled"))
    # Merge repeats the gap rule left.
    merged = []
    for t, room in out:
        if merged and merged[-1][1] == room:
            continue
        merged.append((t, room))
    return merged


def thin(reports, gateway, every):
    """The gateway's reports, one in `every` seconds at most."""
    kept = []
    for t, seen in reports:
        if gateway in seen and (not kept or t - kept[-1][0] >= every):
            kept.append((t, seen))
    return kept


def convert(seq_dir, out_dir, number, annotator, upstairs, every):
    reports, skipped = read_reports(os.path.join(seq_dir, "acceleration.csv"))
    base = BASE + (number - 1) * 3600
    truth = read_truth(os.path.join(seq_dir, f"location_{annotator}.csv"), upstairs)
    os.makedirs(out_dir, exist_ok=True)
    data = ibeacon(number, 1)
    address = bytes([number & 0xFF, 0, 0, 0, 0x5E, 0xC0])  # static random, LSB first
    counts = {}
    for gateway, room in GATEWAYS.items():
        records = [btsnoop_record(report_event(address, data, seen[gateway]), base + t)
                   for t, seen in thin(reports, gateway, every)]
        if not records:
            continue
        with open(os.path.join(out_dir, room + ".btsnoop"), "wb") as f:
            f.write(b"btsnoop\0" + struct.pack(">II", 1, 1002))
            f.writelines(records)
        counts[room] = len(records)
    beacon = f"{UUID}:{number}:1"
    with open(os.path.join(out_dir, "truth.jsonl"), "w") as f:
        for t, room in truth:
            f.write(json.dumps({"t": round(base + t, 3), "beacon": beacon, "room": room},
                               separators=(",", ":")) + "\n")
    return counts, skipped, len(truth)


def concatenate(out, name, parts, rooms):
    """Joins the evaluate directories `parts` of `out` into `out/name`: one
    capture per room (each part's records after its 16-byte header) and
    their truth, in order."""
    gdir = os.path.join(out, name)
    os.makedirs(gdir, exist_ok=True)
    for room in rooms:
        with open(os.path.join(gdir, room + ".btsnoop"), "wb") as f:
            f.write(b"btsnoop\0" + struct.pack(">II", 1, 1002))
            for p in parts:
                with open(os.path.join(out, p, room + ".btsnoop"), "rb") as part:
                    f.write(part.read()[16:])
    with open(os.path.join(gdir, "truth.jsonl"), "w") as f:
        for p in parts:
            with open(os.path.join(out, p, "truth.jsonl")) as part:
                f.write(part.read())


def write_groups(out, done):
    """One directory per set of gateways: the sequences' captures and truths
    concatenated (their times never overlap)."""
    groups = {}
    for s, rooms in done:
        groups.setdefault(tuple(sorted(rooms)), []).append(s)
    for rooms, seqs in sorted(groups.items(), key=lambda g: g[1][0]):
        name = f"group-{int(seqs[0])}-{int(seqs[-1])}" if len(seqs) > 1 else f"group-{int(seqs[0])}"
        concatenate(out, name, seqs, rooms)
        print(f"{name}: sequences {', '.join(seqs)}; gateways {', '.join(rooms)}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("train", help="directory of SPHERE training sequences (00001 ...)")
    p.add_argument("out", help="directory to write one evaluate directory per sequence into")
    p.add_argument("--annotator", type=int, default=0,
                   help="whose labels are the truth: location_N.csv (default 0)")
    p.add_argument("--upstairs", action="store_true",
                   help="label the upstairs rooms 'upstairs', the landing gateway's room")
    p.add_argument("--every", type=float, default=0,
                   help="keep one report in S seconds of each gateway (a sparse receiver)")
    a = p.parse_args()
    sequences = sorted(d for d in os.listdir(a.train)
                       if d.isdigit() and os.path.isfile(os.path.join(a.train, d, "acceleration.csv")))
    if not sequences:
        raise SystemExit(f"{a.train} holds no SPHERE sequences (NNNNN/acceleration.csv)")
    done = []
    for s in sequences:
        labels = os.path.join(a.train, s, f"location_{a.annotator}.csv")
        if not os.path.isfile(labels):
            print(f"{s}: no location_{a.annotator}.csv (a test sequence?), skipped", file=sys.stderr)
            continue
        counts, skipped, lines = convert(os.path.join(a.train, s), os.path.join(a.out, s),
                                         int(s), a.annotator, a.upstairs, a.every)
        done.append((s, list(counts)))
        heard = ", ".join(f"{r} {n}" for r, n in counts.items())
        extra = f", {skipped} malformed rows skipped" if skipped else ""
        print(f"{s}: {heard} reports; {lines} truth lines{extra}")
    write_groups(a.out, done)


if __name__ == "__main__":
    main()
