"""LE advertising reports of a btsnoop capture, read independently of Earshot.

    reports(path) -> [Report]: every legacy (LE Advertising Report) and
    extended (LE Extended Advertising Report) report, in capture order, with
    its capture time (seconds), address ("AA:BB:..", most significant first),
    address type, RSSI and advertising data.
    duration(path): seconds from the first record to the last.
    parse_ad(data): manufacturer data {company: bytes}, service UUIDs, name.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

BTSNOOP_EPOCH_DELTA_US = 0x00DCDDB30F2F8000  # 0 AD to 1970, in microseconds


@dataclass
class Report:
    time: float
    event_type: int
    address_type: int
    address: str
    data: bytes
    rssi: int
    extended: bool


def _records(path: str):
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != b"btsnoop\0":
        raise ValueError(f"{path}: not a btsnoop file")
    _version, datalink = struct.unpack(">II", blob[8:16])
    off = 16
    while off + 24 <= len(blob):
        _orig, incl, flags, _drops, ts = struct.unpack(">IIIIq", blob[off : off + 24])
        off += 24
        payload = blob[off : off + incl]
        off += incl
        t = (ts - BTSNOOP_EPOCH_DELTA_US) / 1e6
        if datalink == 1002:  # H4: a packet type byte first
            if not payload or payload[0] != 0x04:
                continue
            yield t, payload[1:]
        elif datalink == 1001:  # HCI unencapsulated: flags bit 1 = command/event
            if flags & 0x02 and flags & 0x01:
                yield t, payload
        else:
            raise ValueError(f"{path}: datalink {datalink} not supported")


def _address(raw: bytes) -> str:
    return ":".join(f"{b:02X}" for b in reversed(raw))


def reports(path: str) -> list[Report]:
    out: list[Report] = []
    for t, event in _records(path):
        if len(event) < 3 or event[0] != 0x3E:
            continue
        sub, body = event[2], event[3:]
        if sub == 0x02:  # LE Advertising Report: reports one after another
            n, off = body[0], 1
            for _ in range(n):
                etype, atype = body[off], body[off + 1]
                addr = body[off + 2 : off + 8]
                length = body[off + 8]
                data = body[off + 9 : off + 9 + length]
                rssi = struct.unpack("b", body[off + 9 + length : off + 10 + length])[0]
                off += 10 + length
                out.append(Report(t, etype, atype, _address(addr), bytes(data), rssi, False))
        elif sub == 0x0D:  # LE Extended Advertising Report
            n, off = body[0], 1
            for _ in range(n):
                etype = struct.unpack("<H", body[off : off + 2])[0]
                atype = body[off + 2]
                addr = body[off + 3 : off + 9]
                rssi = struct.unpack("b", body[off + 13 : off + 14])[0]
                length = body[off + 23]
                data = body[off + 24 : off + 24 + length]
                off += 24 + length
                out.append(Report(t, etype, atype, _address(addr), bytes(data), rssi, True))
    return out


def duration(path: str) -> float:
    times = [t for t, _ in _records(path)]
    return times[-1] - times[0] if times else 0.0


def first_record_time(path: str) -> float:
    for t, _ in _records(path):
        return t
    raise ValueError(f"{path}: no records")


BASE_UUID = "-0000-1000-8000-00805f9b34fb"


def parse_ad(data: bytes) -> dict:
    mfr: dict[int, bytes] = {}
    uuids: list[str] = []
    name = None
    off = 0
    while off < len(data):
        length = data[off]
        if length == 0:
            break
        kind, value = data[off + 1], data[off + 2 : off + 1 + length]
        off += 1 + length
        if kind == 0xFF and len(value) >= 2:
            mfr[value[0] | value[1] << 8] = bytes(value[2:])
        elif kind in (0x02, 0x03):
            uuids += [f"0000{value[i + 1]:02x}{value[i]:02x}{BASE_UUID}" for i in range(0, len(value) - 1, 2)]
        elif kind in (0x04, 0x05):
            uuids += [value[i : i + 4][::-1].hex() + BASE_UUID for i in range(0, len(value) - 3, 4)]
        elif kind in (0x06, 0x07):
            for i in range(0, len(value) - 15, 16):
                h = value[i : i + 16][::-1].hex()
                uuids.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
        elif kind in (0x08, 0x09):
            name = value.decode("utf-8", "replace")
    return {"manufacturer_data": mfr, "service_uuids": uuids, "name": name}
