#!/usr/bin/env python3
"""Writes a btsnoop capture in which a separated AirTag follows the laptop:
90 minutes from 2026-01-01 00:00 UTC, three places of 30 minutes (five
stationary advertisers each, their addresses changing with the place) and
the tag heard once a minute throughout, as the tests' writeFollowingCapture
(Tests/EarshotLinuxTests/TrackersCommandTests.swift) writes it. At medium
sensitivity it follows at 01:10 (60 min, and the third place once settled).

    scripts/ha/following-capture.py OUT.btsnoop
"""

import struct
import sys

START_US = 1_767_225_600_000_000  # 2026-01-01 00:00 UTC
BTSNOOP_EPOCH_US = 0x00DCDDB30F2F8000  # 0000-01-01 to 1970-01-01, as btsnoop counts
TAG = 0xC31122334455


def find_my_separated(kind, key):
    """Find My, separated: company 0x004C, type 0x12, length 0x19, status, 22 key bytes, bits, hint."""
    v = [0x4C, 0x00, 0x12, 0x19, (kind & 3) << 4]
    v += [((key >> (8 * (i % 8))) + i) & 0xFF for i in range(22)]
    v += [0x01, 0x00]
    return bytes([len(v) + 1, 0xFF] + v)


def report(address, data, rssi=-60):
    """An HCI LE Advertising Report event (ADV_NONCONN_IND, random address), H4 framed."""
    body = bytes([0x02, 1, 3, 1]) + address.to_bytes(6, "little") + bytes([len(data)]) + data
    body += struct.pack("b", rssi)
    return bytes([0x04, 0x3E, len(body)]) + body


def record(packet, micros):
    return struct.pack(">IIIIq", len(packet), len(packet), 3, 0, micros + BTSNOOP_EPOCH_US) + packet


def main(path):
    env = bytes([0x02, 0x01, 0x06, 0x03, 0xFF, 0x59, 0x00])
    tag = find_my_separated(1, 42)
    out = bytearray(b"btsnoop\0" + struct.pack(">II", 1, 1002))
    for minute in range(90):
        place = minute // 30
        heard = [(0xC10000000000 | place << 8 | i, env) for i in range(5)] + [(TAG, tag)]
        for i, (address, data) in enumerate(heard):
            out += record(report(address, data), START_US + minute * 60_000_000 + i * 100_000)
    with open(path, "wb") as f:
        f.write(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: following-capture.py OUT.btsnoop")
    main(sys.argv[1])
