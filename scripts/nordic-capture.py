#!/usr/bin/env python3
"""Rewrites a LINKTYPE 256 capture (LE link layer with PHDR) as the nRF
Sniffer for Bluetooth LE would have written it: LINKTYPE 272, each packet's
bytes unchanged behind a Nordic BLE header of the version asked for.

Usage: scripts/nordic-capture.py IN.pcap OUT.pcap VERSION   (VERSION 0 to 3)

There is no nRF Sniffer capture among the shared captures, so the tests
and the fuzz seeds make them from the real packets of the LINKTYPE 256
ones. What the sniffer would have measured and the source does not say is
filled in, and said here:
- CRC OK (flags bit 0): the sniffer checks every packet; here an
  advertising-channel packet's CRC-24 is checked (init 0x555555), and a
  data-channel packet (its CRC init is in a CONNECT_IND) is marked OK.
- RSSI: the PHDR's signal where it is valid; otherwise -(40 + 7 n mod 60)
  dBm for the n-th packet, so that RSSIs vary and can be compared.
- Channel: the PHDR's RF channel as a channel index; PHY 1M; event counter
  0; board 0; packet counter n; time: microseconds from the previous packet
  (versions 0 to 2) or the capture's clock (version 3).
- Versions 0 and 1 say a record's length in one byte: the few longer
  records (noise a HackRF took for packets) are left out of them.
"""
import struct
import sys

ADV_AA = 0x8E89BED6


def crc24(data, init=0x555555):
    # Core Vol 6 Part B 3.1.1, as a right-shifting register: init and
    # polynomial bit-reversed, bytes fed least significant bit first.
    state = int(f"{init:024b}"[::-1], 2)
    for byte in data:
        for _ in range(8):
            bit = (state ^ byte) & 1
            state >>= 1
            byte >>= 1
            if bit:
                state ^= 0xDA6000
    return state


def channel_index(rf):
    return {0: 37, 12: 38, 39: 39}.get(rf, rf - 1 if rf <= 11 else rf - 2)


def records(path):
    raw = open(path, "rb").read()
    magic = raw[:4]
    order = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<",
             b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}[magic]
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    link = struct.unpack(order + "I", raw[20:24])[0] & 0x0FFFFFFF
    if link != 256:
        sys.exit(f"{path}: link type {link}, not 256")
    at = 24
    while at + 16 <= len(raw):
        sec, frac, incl, _ = struct.unpack(order + "IIII", raw[at:at + 16])
        body = raw[at + 16:at + 16 + incl]
        at += 16 + incl
        if len(body) < incl:
            break
        yield sec, frac // 1000 if nanos else frac, body


def crc_ok(packet):
    if len(packet) < 6 or struct.unpack("<I", packet[:4])[0] != ADV_AA:
        return True
    end = 6 + packet[5]
    if len(packet) < end + 3:
        return False
    return crc24(packet[4:end]) == int.from_bytes(packet[end:end + 3], "little")


def main():
    src, dst, version = sys.argv[1], sys.argv[2], int(sys.argv[3])
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 272))
    previous = None
    for n, (sec, usec, body) in enumerate(records(src)):
        if len(body) <= 10:
            continue
        phdr, packet = body[:10], body[10:]
        flags = struct.unpack("<H", phdr[8:10])[0]
        signal = struct.unpack("b", phdr[1:2])[0]
        rssi = -signal if flags & 0x0002 and signal <= 0 else 40 + 7 * n % 60
        adv = len(packet) >= 4 and struct.unpack("<I", packet[:4])[0] == ADV_AA
        micros = sec * 1_000_000 + usec
        clock = micros & 0xFFFFFFFF if version == 3 else (
            0 if previous is None else min(max(micros - previous, 0), 0xFFFFFFFF))
        previous = micros
        event = bytes([1 if crc_ok(packet) else 0, channel_index(phdr[0]), rssi]) + \
            struct.pack("<HI", 0, clock)
        if version < 2 and 10 + len(packet) > 255:
            continue  # a one-byte length cannot say it
        packet_id = 0x02 if version == 3 and adv else 0x06
        counter = struct.pack("<H", n & 0xFFFF)
        if version == 0:
            record = b"\xbe\xef" + bytes([packet_id]) + counter + b"\0\0" + \
                bytes([len(event) + len(packet)]) + event + packet
        else:
            payload = bytes([10]) + event + packet
            if version == 1:
                head = bytes([0, 6, len(payload), 1]) + counter + bytes([packet_id])
            else:
                head = bytes([0]) + struct.pack("<H", len(payload)) + bytes([version]) + \
                    counter + bytes([packet_id])
            record = head + payload
        out += struct.pack("<IIII", sec, usec, len(record), len(record)) + record
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main()
