#!/usr/bin/env python3
"""Judges a scripts/ha-esphome.sh run: what HA's own Bluetooth stack saw of
the agent's ESPHome proxy (the earshot_probe integration's output) against
the capture the agent replayed (read here from the btsnoop file, not through
Earshot). Prints figures, then one PASS/FAIL line per check; exit status 1
when a check fails."""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import capture  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--work", required=True)
ap.add_argument("--capture", required=True)
ap.add_argument("--pace", type=float, required=True)
ap.add_argument("--name", required=True)
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--bermuda", default="0")
ap.add_argument("--phone-irk", default="")
ap.add_argument("--install-seconds", default="?")
ap.add_argument("--run-seconds", default="?")
args = ap.parse_args()
W = Path(args.work)

results: list[tuple[bool, str]] = []
notes: list[str] = []


def check(ok: bool, what: str) -> bool:
    results.append((bool(ok), what))
    return bool(ok)


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


marks: dict[str, tuple[float, str]] = {}
for line in (W / "marks.txt").read_text().splitlines():
    name, t, *rest = line.split(" ", 2)
    marks[name] = (float(t), rest[0] if rest else "")
mt = {k: v[0] for k, v in marks.items()}
agent_start = mt["agent_start"]
start_at = float(marks["replay_start"][1])

events = sorted(read_jsonl(W / "probe" / "events.jsonl"), key=lambda e: e["t"])
snapshots = sorted(read_jsonl(W / "probe" / "snapshots.jsonl"), key=lambda s: s["t"])
ha_log = (W / "ha.log").read_text(encoding="utf-8", errors="replace") if (W / "ha.log").exists() else ""
agent_log = (W / "agent.log").read_text(encoding="utf-8", errors="replace")


def fmt(x: float | None, unit: str = "s") -> str:
    return "-" if x is None else f"{x:.2f} {unit}".rstrip()


# --- the capture: what the proxy should forward ------------------------------------
reports = capture.reports(args.capture)
t0 = capture.first_record_time(args.capture)
forwarded = [
    r for r in reports if len(r.data) <= 62 and r.address_type != 0xFF
]  # the proxy leaves out longer data and anonymous reports (docs/esphome-proxy.md)
want: dict[str, dict] = {}
for r in forwarded:
    a = want.setdefault(
        r.address,
        {"address_type": r.address_type, "rssis": set(), "first": r.time, "count": 0, "mfr": {}, "uuids": set()},
    )
    a["rssis"].add(r.rssi)
    a["last_rssi"] = r.rssi
    a["last"] = r.time
    a["count"] += 1
    ad = capture.parse_ad(r.data)
    a["mfr"].update(ad["manufacturer_data"])
    a["uuids"].update(ad["service_uuids"])
ibeacons = {
    addr for addr, a in want.items() if 0x004C in a["mfr"] and a["mfr"][0x004C][:2] == b"\x02\x15"
}


def played_at(capture_time: float) -> float:
    return start_at + (capture_time - t0) / args.pace


# --- HA's start --------------------------------------------------------------------
m = re.search(r"Home Assistant initialized in ([0-9.]+)s", ha_log)
ha_init = float(m.group(1)) if m else None
ha_wall = mt.get("ha_up", 0) - mt.get("ha_launch", 0)
setup = next((e for e in events if e["event"] == "setup"), {})

# --- the config flow ----------------------------------------------------------------
steps = {e["step"]: e["result"] for e in events if e["event"] == "flow_step"}
flow_error = next((e for e in events if e["event"] == "flow_error"), None)
flow_done = next((e for e in events if e["event"] == "flow_done"), None)
flow_start = next((e for e in events if e["event"] == "flow_start"), None)

# --- transitions ----------------------------------------------------------------------
entry_loaded_t = connected_t = disconnected_t = None
for e in events:
    if e["event"] != "esphome_entries":
        continue
    for entry in e["entries"]:
        if entry_loaded_t is None and entry["state"] == "loaded":
            entry_loaded_t = e["t"]
        if connected_t is None and entry["connected"]:
            connected_t = e["t"]
        if connected_t is not None and not entry["connected"] and e["t"] > mt["agent_stop"]:
            disconnected_t = disconnected_t or e["t"]
scanner_up_t = scanner_down_t = None
scanners_at_up: list = []
for e in events:
    if e["event"] != "scanner_count":
        continue
    if scanner_up_t is None and e["count"] >= 1:
        scanner_up_t, scanners_at_up = e["t"], e["scanners"]
    if scanner_up_t is not None and e["count"] == 0 and e["t"] > mt["agent_stop"]:
        scanner_down_t = scanner_down_t or e["t"]

# The reload in the middle of the replay.
r_start = next((e for e in events if e["event"] == "reload_start"), None)
r_done = next((e for e in events if e["event"] == "reload_done"), None)
r_error = next((e for e in events if e["event"] == "reload_error"), None)
rereg_t = None
if r_start:
    before = [e["obj"] for e in events if e["event"] == "scanner_object" and e["t"] < r_start["t"]]
    for e in events:
        if (e["event"] == "scanner_object" and e["t"] >= r_start["t"] and e["present"]
                and e["obj"] != (before[-1] if before else None)):
            rereg_t = e["t"]
            break
r_secs = r_done["t"] - r_start["t"] if r_start and r_done else None

# The dropped connection (ss -K): the next new scanner object after it.
drop_t = mt.get("drop")
drop_rereg_t = None
if drop_t is not None:
    before = [e["obj"] for e in events if e["event"] == "scanner_object" and e["t"] < drop_t]
    for e in events:
        if (e["event"] == "scanner_object" and e["t"] >= drop_t and e["present"]
                and e["obj"] != (before[-1] if before else None)):
            drop_rereg_t = e["t"]
            break


def in_drop_window(t: float | None) -> bool:
    return t is not None and drop_t is not None and drop_t <= t <= drop_t + 10

first_seen = {}
for e in events:
    if e["event"] == "first_seen":
        first_seen.setdefault(e["address"], e)
first_beacon_t = min((first_seen[a]["t"] for a in first_seen if a in ibeacons), default=None)

# --- what HA discovered ------------------------------------------------------------------
seen: dict[str, dict] = {}
for s in snapshots:
    for d in s["devices"]:
        h = seen.setdefault(d["address"], {"rssis": set(), "types": set(), "sources": set(), "mfr": {}, "uuids": set(), "connectable": set()})
        h["rssis"].add(d["rssi"])
        h["types"].add(d["address_type"])
        h["sources"].add(d["source"])
        h["mfr"].update(d["manufacturer_data"])
        h["uuids"].update(d["service_uuids"])
        h["connectable"].add(d["connectable"])
for a, e in first_seen.items():
    h = seen.setdefault(a, {"rssis": set(), "types": set(), "sources": set(), "mfr": {}, "uuids": set(), "connectable": set()})
    h["rssis"].add(e["rssi"])
final = None
for s in snapshots:
    if mt["replay_done"] + 1.5 <= s["t"] <= mt["agent_stop"]:
        final = s
final_devices = {d["address"]: d for d in final["devices"]} if final else {}
last_connected = None
for s in snapshots:
    for entry in s["esphome"]:
        if entry.get("connected"):
            last_connected = (s, entry)

# ====================================================================================
print("== figures")
print(f"install/check of the venv            {args.install_seconds} s; whole run {args.run_seconds} s")
print(f"HA start (launch -> initialized)     {fmt(ha_wall)} (HA says initialized in {fmt(ha_init)})")
print(f"capture                              {len(reports)} reports, {len(want)} addresses "
      f"({len(ibeacons)} iBeacon), {capture.duration(args.capture):.1f} s at --pace {args.pace:g}; "
      f"first record played {start_at - agent_start:.1f} s after the agent start")


def since(t):
    return None if t is None else t - agent_start


print(f"agent start -> proxy listening       {fmt(since(mt.get('proxy_listening')))}")
print(f"agent start -> esphome entry loaded  {fmt(since(entry_loaded_t))}")
print(f"agent start -> HA connected          {fmt(since(connected_t))}")
print(f"agent start -> scanner registered    {fmt(since(scanner_up_t))}")
print(f"agent start -> first beacon in HA    {fmt(since(first_beacon_t))}")
lat = []
for a, e in first_seen.items():
    if a in want:
        lat.append(e["t"] - played_at(want[a]["first"]))
if lat:
    print(f"first advertisement played -> in HA  median {statistics.median(lat):.3f} s, max {max(lat):.3f} s ({len(lat)} addresses)")
if r_start and r_done:
    print(f"HA reload of the entry               {r_done['t'] - r_start['t']:.3f} s, {r_start['t'] - start_at:.1f} s into the replay")
print(f"agent SIGINT -> HA disconnected      {fmt(None if disconnected_t is None else disconnected_t - mt['agent_stop'])}")
print(f"agent SIGINT -> scanner unregistered {fmt(None if scanner_down_t is None else scanner_down_t - mt['agent_stop'])}")
print(f"addresses                            capture {len(want)}, HA discovered {len(seen)}, "
      f"in both {len(set(want) & set(seen))}")
dbus = [line.split("] ", 1)[-1] for line in ha_log.splitlines() if "[bluetooth_adapters" in line and "DBus" in line]
print(f"HA's bluetooth without D-Bus         {len(dbus)} bluetooth_adapters lines: {dbus[:1]}")
print(f"snapshots                            {len(snapshots)}; final one {fmt(None if not final else final['t'] - mt['replay_done'])} after the replay's end")
if last_connected:
    s, entry = last_connected
    info = entry.get("device_info", {})
    print(f"HA's esphome entry                   title {entry['title']!r}, unique_id {entry['unique_id']}, api {entry.get('api_version')}, "
          f"device_name {entry.get('device_name')!r}")
    print(f"device info (as HA read it)          " + ", ".join(f"{k}={info.get(k)!r}" for k in
          ("name", "mac_address", "bluetooth_mac_address", "esphome_version", "model", "manufacturer", "project_name",
           "project_version", "bluetooth_proxy_feature_flags", "feature_flags_compat", "uses_password")))
    for dev in s.get("registry", []):
        print(f"HA device registry                   name {dev['name']!r}, manufacturer {dev['manufacturer']!r}, "
              f"model {dev['model']!r}, sw {dev['sw_version']!r}, hw {dev['hw_version']!r}")
if scanners_at_up:
    print(f"scanners when registered             {scanners_at_up}")
print("addresses (capture: reports, type, RSSI range, last | HA: first seen after its first report, RSSIs shown, final RSSI)")
for a in sorted(set(want) | set(seen)):
    w, h = want.get(a), seen.get(a)
    left = (f"{w['count']:4d} reports, type {w['address_type']}, RSSI {min(w['rssis'])}..{max(w['rssis'])}, last {w['last_rssi']:4d}"
            if w else "not in the capture")
    if h:
        fs = first_seen.get(a)
        late = f"{fs['t'] - played_at(w['first']):+.2f} s" if fs and w else "-"
        fin = final_devices.get(a, {}).get("rssi")
        right = f"first {late}, {len(h['rssis'])} RSSIs, final {fin}"
    else:
        right = "not discovered"
    tag = " iBeacon" if a in ibeacons else ""
    print(f"  {a}{tag:8s} {left} | {right}")
ib_final = final["ibeacon"] if final else (snapshots[-1]["ibeacon"] if snapshots else [])
trackers = [e for e in ib_final if e["entity_id"].startswith("device_tracker.")]
print(f"ibeacon entities                     {len(ib_final)}, {len(trackers)} device trackers: "
      + ", ".join(f"{e['entity_id'].split('.', 1)[1]}={e['state']}" for e in trackers))

# ====================================================================================
check(setup.get("bluetooth_loaded") and setup.get("esphome_loaded"),
      "HA's bluetooth and esphome integrations set up with no local adapter and no system D-Bus "
      f"(probe: {setup})")
check(flow_start is not None and flow_error is None and flow_done is not None,
      "the esphome config flow ran" + (f" (error: {flow_error['error']})" if flow_error else ""))
user = steps.get("user", {})
check(user.get("type") == "form" and user.get("step_id") == "encryption_key",
      f"HA asks for the encryption key after host and port (user step -> {user})")
check((user.get("description_placeholders") or {}).get("name") == args.name,
      f"HA learnt the node's name from the refused handshake (the form names {(user.get('description_placeholders') or {}).get('name')!r})")
wrong = steps.get("wrong_key", {})
check(wrong.get("type") == "form" and (wrong.get("errors") or {}).get("base") == "invalid_psk",
      f"a wrong key is refused: HA says invalid encryption key ({wrong})")
done = (flow_done or {}).get("result", {})
check(done.get("type") == "create_entry" and done.get("title") == args.name,
      f"the key is accepted and the entry created ({done.get('type')}, title {done.get('title')!r})")
check(entry_loaded_t is not None, f"HA's esphome entry loaded ({fmt(since(entry_loaded_t))} after the agent start)")
check(connected_t is not None, f"HA connected to the proxy ({fmt(since(connected_t))} after the agent start)")
info = last_connected[1].get("device_info", {}) if last_connected else {}
check(info.get("name") == args.name and info.get("esphome_version") and info.get("feature_flags_compat", 0) & 1
      and not info.get("feature_flags_compat", 0) & 2,
      f"device info: name {info.get('name')!r}, passive scan without active connections "
      f"(flags {info.get('feature_flags_compat')})")
sc = scanners_at_up[0] if scanners_at_up else {}
# The scanner's source: bluetooth_mac_address where the device info has it
# (HA 2025 and later read it; 2024.3 the mac_address, which is the same here).
source = info.get("bluetooth_mac_address") or info.get("mac_address")
# habluetooth names a remote scanner "NAME (SOURCE)"
check(scanner_up_t is not None and sc.get("name") in (args.name, f"{args.name} ({source})")
      and sc.get("source") == source,
      f"HA registered the node as a remote scanner, named {sc.get('name')!r}, source {sc.get('source')} "
      f"({fmt(since(scanner_up_t))} after the agent start)")
# FEATURE_STATE_AND_MODE (64): HA subscribes to the scanner state, which the
# proxy sends with each subscription and change; habluetooth 5 and later show
# it as the scanner's current mode (2024.3.3's habluetooth has no modes). The
# replayed agent scans as configured: passive.
final_scanners = (final or {}).get("scanners") or []
if any("current_mode" in sc_ for sc_ in final_scanners):
    modes = [(sc_.get("current_mode"), sc_.get("requested_mode")) for sc_ in final_scanners]
    check(info.get("feature_flags_compat", 0) & 64 and modes and all(m[0] == "passive" for m in modes),
          f"HA knows the scanner's state (flag 64): current mode as the agent reports it, passive "
          f"(current, requested: {modes})")
    if "mode_request" in mt:
        # The user set `active` in the entry's options mid-replay: HA asked
        # the proxy, and the agent counts the client as asking for active
        # scanning (a replay has no radio to switch: its state stays as
        # configured, passive, and HA shows that as the current mode).
        status_file = W / "status-active.json"
        scanner_status = {}
        if status_file.exists():
            try:
                scanner_status = json.loads(status_file.read_text())["esphome"]["scanner"]
            except (ValueError, KeyError):
                pass
        mode_event = next((e for e in events if e["event"] in ("scanning_mode", "scanning_mode_error")), {})
        took = mt.get("mode_seen", 0) - mt["mode_request"]
        check(mode_event.get("event") == "scanning_mode"
              and (mode_event.get("result") or {}).get("type") == "create_entry"
              and scanner_status.get("clients_asking_active", 0) >= 1
              and any(m[1] == "active" for m in modes),
              f"the user sets active scanning in the esphome options: HA asks the proxy, the agent's status "
              f"counts it ({scanner_status}; {took:.1f} s after the request), HA's scanner requested mode "
              f"{[m[1] for m in modes]}" + (f" (error {mode_event.get('error')})" if "error" in mode_event else ""))
    asked = re.findall(r"esphome: \S+ asks for (\w+) scanning", agent_log)
    print(f"scanner mode                         HA (current, requested): {modes}; HA asked the agent for: {asked or 'nothing'}")
else:
    print("scanner mode                         this HA's habluetooth has no scanner modes")
max_scanners = max((s["scanner_count"] for s in snapshots), default=0)
max_conn = max((s["connectable_scanner_count"] for s in snapshots), default=0)
check(max_scanners == 1 and max_conn == 0,
      f"it is HA's only scanner, and not connectable (at most {max_scanners} scanner(s), {max_conn} connectable)")
check(scanner_up_t is not None and scanner_up_t < start_at,
      f"the scanner was registered before the first record played ({fmt(None if scanner_up_t is None else start_at - scanner_up_t)} before)")
check(first_beacon_t is not None, f"an iBeacon appeared in HA's discovered devices ({fmt(since(first_beacon_t))} after the agent start)")
missing = sorted(set(want) - set(seen))
extra = sorted(set(seen) - set(want))
check(not missing and not extra,
      f"HA discovered every address of the capture and no other: {len(seen)} of {len(want)}"
      + (f"; missing {missing}" if missing else "") + (f"; not in the capture {extra}" if extra else ""))
bad_src = sorted(a for a, h in seen.items() if h["sources"] - {source})
check(not bad_src, f"every discovered device came from the node's scanner (source {source})"
      + (f"; other sources for {bad_src}" if bad_src else ""))
bad_type = sorted(a for a in set(want) & set(seen) if seen[a]["types"] - {None} != {want[a]["address_type"]})
check(not bad_type, "address types as in the capture"
      + (f"; differ for {[(a, sorted(seen[a]['types'], key=str), want[a]['address_type']) for a in bad_type]}" if bad_type else ""))
bad_mfr = []
for a in sorted(ibeacons & set(seen)):
    got = seen[a]["mfr"].get("76")
    if got != want[a]["mfr"][0x004C].hex():
        bad_mfr.append((a, got, want[a]["mfr"][0x004C].hex()))
check(not bad_mfr and ibeacons <= set(seen),
      f"every iBeacon's manufacturer data 0x004C as in the capture ({len(ibeacons & set(seen))} of {len(ibeacons)})"
      + (f"; differ: {bad_mfr}" if bad_mfr else ""))
bad_other_mfr = sorted(a for a in set(want) & set(seen)
                       if set(seen[a]["mfr"]) != {str(k) for k in want[a]["mfr"]})
check(not bad_other_mfr, "manufacturer ids as in the capture for every address"
      + (f"; differ for {bad_other_mfr}" if bad_other_mfr else ""))
bad_uuid = sorted(a for a in set(want) & set(seen) if seen[a]["uuids"] != want[a]["uuids"])
check(not bad_uuid, "service UUIDs as in the capture" + (f"; differ for {bad_uuid}" if bad_uuid else ""))
bad_rssi = sorted((a, sorted(seen[a]["rssis"] - want[a]["rssis"])) for a in set(want) & set(seen)
                  if seen[a]["rssis"] - want[a]["rssis"])
check(not bad_rssi, "every RSSI HA showed is one the capture has for that address"
      + (f"; not in the capture: {bad_rssi}" if bad_rssi else ""))
if final:
    bad_final = sorted((a, final_devices[a]["rssi"], want[a]["last_rssi"]) for a in set(want) & set(final_devices)
                       if final_devices[a]["rssi"] != want[a]["last_rssi"])
    gone = sorted(set(want) - set(final_devices))
    check(not bad_final and not gone,
          f"after the replay, HA's RSSI of every address is its last report's ({len(set(want) & set(final_devices))} addresses)"
          + (f"; differ (HA, capture): {bad_final}" if bad_final else "") + (f"; no longer listed: {gone}" if gone else ""))
else:
    check(False, "a snapshot after the replay (none between its end and the agent's stop)")
check(bool(lat) and max(lat) < 2.0,
      f"each address reached HA within 2 s of its first advertisement being played (max {fmt(max(lat) if lat else None)})")
check(all(h["connectable"] <= {False} for h in seen.values()), "every discovered device is non-connectable (a passive proxy)")
fixed_groups = {"8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182_1_10", "0c0ffee0-0000-4000-8000-000000000001_9_9"}
ib_ids = {e["unique_id"] for e in ib_final}
check(all(any(u.startswith(g) for u in ib_ids) for g in fixed_groups),
      f"the ibeacon integration made entities for the beacons on fixed addresses ({len(ib_final)} entities)")
check(r_done is not None and r_done.get("ok") and r_done.get("state") == "loaded" and r_secs < 3,
      f"HA reloads the entry mid-replay (disconnect, waiting for the node's DisconnectResponse, and set up again) "
      f"in {fmt(r_secs * 1000 if r_secs is not None else None, 'ms')}" + (f" (error: {r_error['error']})" if r_error else "")
      + ("" if r_done is None else f" (ok {r_done.get('ok')}, state {r_done.get('state')})"))
check(rereg_t is not None and rereg_t - r_start["t"] < 5,
      f"after the reload HA registered the scanner again ({fmt(None if rereg_t is None or not r_start else rereg_t - r_start['t'])} after the reload began; the probe looks every 0.2 s)")
ha_connects = agent_log.count("connected (Home Assistant")
check(ha_connects >= 2, f"the agent served HA's connection after the reload ({ha_connects} Home Assistant connections)")
disc_fail = [line for line in ha_log.splitlines() if "disconnect request failed" in line]
check(not disc_fail, "HA's DisconnectRequest was answered" + (f": {disc_fail[0]}" if disc_fail else ""))
agent_rc = marks.get("agent_stopped", (0, "?"))[1]
check(agent_rc == "0", f"the agent exits 0 on SIGINT (exit {agent_rc})")
check(disconnected_t is not None and disconnected_t - mt["agent_stop"] < 5,
      f"HA saw the node go when the agent stopped ({fmt(None if disconnected_t is None else disconnected_t - mt['agent_stop'])})")
check(scanner_down_t is not None and scanner_down_t - mt["agent_stop"] < 5,
      f"HA unregistered the scanner when the agent stopped ({fmt(None if scanner_down_t is None else scanner_down_t - mt['agent_stop'])})")
ours = re.compile(r"\b(ERROR|WARNING|CRITICAL)\b.*\[(homeassistant\.components\.(esphome|bluetooth|ibeacon|private_ble_device|zeroconf)|aioesphomeapi|bleak_esphome|habluetooth|bluetooth_adapters|custom_components\.(earshot_probe|bermuda))[^\]]*\]")
ha_problems = [line for line in ha_log.splitlines() if ours.search(line)]


def log_time(line: str) -> float | None:
    m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)", line)
    if not m:
        return None
    from datetime import datetime, timezone  # HA logs local time; the test runs HA in UTC
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


# What the test itself causes is expected, not the agent's doing: the config
# flow's steps without a key and with a wrong key (aioesphomeapi warns of
# each), and HA's reconnect attempts once the agent has been stopped.
flow_end = (flow_done or {}).get("t", mt.get("flow_request", 0) + 30)
expected_problems, agent_problems = [], []
for line in ha_problems:
    t = log_time(line)
    in_flow = t is not None and mt.get("flow_request", 0) - 1 <= t <= flow_end + 1 and (
        "requires encryption" in line or "Invalid encryption key" in line)
    after_stop = t is not None and t >= mt["agent_stop"] and "Can't connect to ESPHome API" in line
    # The drop the test makes: HA's socket destroyed under it.
    dropped = in_drop_window(t) and re.search(
        r"Connection error occurred|Connection lost|aborted|reset by peer|EOF received|Error while reading", line)
    (expected_problems if in_flow or after_stop or dropped else agent_problems).append(line)
errors = [line for line in agent_problems if " ERROR " in line or " CRITICAL " in line]
check(not agent_problems,
      f"no error or warning from HA's esphome/bluetooth stack about the agent in its log ({len(errors)} errors, "
      f"{len(agent_problems) - len(errors)} warnings; {len(expected_problems)} expected ones the test causes: "
      "the flow's missing and wrong key, the dropped connection, reconnects after the agent's stop)")
check(drop_rereg_t is not None and drop_rereg_t - drop_t < 5,
      f"after the dropped connection (no goodbye) HA connected and registered the scanner again "
      f"({fmt(None if drop_rereg_t is None else drop_rereg_t - drop_t)} after the drop; the probe looks every 0.2 s)")
# private_ble_device: the phone (its IRK in the entry) on its rotating
# private addresses, through the node's scanner only.
pbd = final["private_ble_device"] if final and "private_ble_device" in final else []
pbd_trackers = [e for e in pbd if e["entity_id"].startswith("device_tracker.")]
check(any(e["state"] == "home" and e["source"] == source for e in pbd_trackers),
      f"private_ble_device placed the phone (its IRK) home through the node's scanner: "
      + (", ".join(f"{e['entity_id']}={e['state']} (source {e['source']})" for e in pbd_trackers) or "no tracker"))
# Tracebacks, each with the logger of the line before it. The ffmpeg
# integration (a dependency of tts, which assist_pipeline, which esphome
# needs) logs one when there is no ffmpeg binary: not the proxy's business.
tracebacks, ignored = [], []
lines = ha_log.splitlines()
for i, line in enumerate(lines):
    if line.startswith("Traceback (most recent call last)"):
        before = next((lines[j] for j in range(i - 1, -1, -1) if re.match(r"\d{4}-\d\d-\d\d ", lines[j])), "")
        (ignored if "[haffmpeg." in before else tracebacks).append(before)
check(not tracebacks, f"no traceback in HA's log ({len(tracebacks)}"
      + (f"; {len(ignored)} from ffmpeg, not installed, ignored" if ignored else "") + ")"
      + "".join(f"\n    after: {t}" for t in tracebacks[:5]))
# docs/esphome-proxy.md: "adds a device named after `name`, with the model
# `Linux` and the manufacturer `Earshot`".
reg = (last_connected[0].get("registry") or [{}])[0] if last_connected else {}
check(reg.get("name") == args.name and reg.get("manufacturer") == "Earshot" and reg.get("model") == "Linux",
      f"HA's device is as docs/esphome-proxy.md says: name {args.name!r}, manufacturer 'Earshot', model 'Linux' "
      f"(HA made name {reg.get('name')!r}, manufacturer {reg.get('manufacturer')!r}, model {reg.get('model')!r}, "
      f"hw_version {reg.get('hw_version')!r}; the device info has project_name {info.get('project_name')!r})")
# ESPHome's APIServer::on_shutdown sends every client a DisconnectRequest,
# so HA takes a node's restart as expected rather than a lost connection.
# The last disconnect in HA's log is the agent's stop (the reload's comes
# before it, and nothing connects after it).
disconnects = [line for line in lines if "disconnected (expected=" in line]
last = disconnects[-1] if disconnects else ""
eof = [line for line in lines if "EOF received" in line and not in_drop_window(log_time(line))]
check("expected=True" in last and not eof,
      "on SIGINT the proxy says goodbye as ESPHome does (DisconnectRequest): HA sees an expected disconnect "
      f"(HA: {last.split('] ', 1)[-1] or 'no disconnect'}; {len(eof)} 'EOF received' warnings in HA's log)")
agent_bad = [line for line in agent_log.splitlines() if "esphome:" in line]
sent = re.findall(r"esphome: \S+ closed \((\d+) batches sent, (\d+) dropped\)", agent_log)
check(bool(sent) and all(d == "0" for _, d in sent),
      "the agent dropped no batch for HA (" + ", ".join(f"{a} sent, {d} dropped" for a, d in sent) + ")")

# Bermuda (--bermuda 1): the desk beacon and the phone, heard only through
# the laptop, placed in the laptop's area within a minute of their first
# advertisement, with a distance; and kept there across the reload.
if args.bermuda == "1":
    area_event = next((e for e in events if e["event"] == "scanner_area"), None)
    check(area_event is not None and any(d["connection"][0] == "bluetooth" for d in area_event["devices"]),
          f"the scanner's device (HA's bluetooth integration made it) put in an area as a user does: {area_event and area_event['devices']}")
    area_name = area_event["area"] if area_event else "Office"
    desk = next((a for a in ibeacons if want[a]["mfr"][0x004C][2:18].hex() == "8f2c1a3e5b7d4e90a1c23d4e5f607182"
                 and want[a]["mfr"][0x004C][18:22] == bytes([0, 1, 0, 10])), None)
    # The phone's resolvable private addresses: top bits 01.
    rpas = [a for a in want if 0x40 <= int(a[:2], 16) <= 0x7F]
    subjects = [("the desk beacon", "8f2c1a3e5b7d4e90a1c23d4e5f607182_1_10",
                 want[desk]["first"] if desk else None),
                ("the phone (its IRK)", args.phone_irk, min((want[a]["first"] for a in rpas), default=None))]
    for label, uid, first in subjects:
        placed_t, distance, left = None, None, 0
        for snap in snapshots:
            # Its sensors (its device tracker has the same unique id).
            ents = {e["unique_id"]: e for e in snap.get("bermuda", []) if e["entity_id"].startswith("sensor.")}
            area = (ents.get(uid) or {}).get("state")
            if placed_t is None and area == area_name:
                placed_t = snap["t"]
            if placed_t is not None and snap["t"] <= mt["replay_done"]:
                if area != area_name:
                    left += 1
                d = (ents.get(uid + "_range") or {}).get("state")
                try:
                    distance = float(d)
                except (TypeError, ValueError):
                    pass
        lat_b = None if placed_t is None or first is None else placed_t - played_at(first)
        print(f"Bermuda: {label:24s} placed in {area_name!r} {fmt(lat_b)} after its first advertisement; distance {distance} m; "
              f"{left} snapshots elsewhere after that")
        check(lat_b is not None and lat_b <= 60 and distance is not None,
              f"Bermuda placed {label} in the laptop's area {area_name!r} within a minute of its first advertisement "
              f"({fmt(lat_b)}), with a distance ({distance} m)")
        check(placed_t is not None and left == 0,
              f"Bermuda kept {label} there to the replay's end, across the reload ({left} snapshots elsewhere)")

for line in ha_problems[:20]:
    notes.append("HA log: " + line)
for line in agent_bad[:20]:
    notes.append("agent log: " + line)
if notes:
    print("== log lines (warnings and errors of HA's esphome/bluetooth stack; the agent's esphome lines)")
    for n in notes:
        print(n)
print("== checks")
for ok, what in results:
    print(f"{'PASS' if ok else 'FAIL'} {what}")
failed = sum(1 for ok, _ in results if not ok)
print(f"== {len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
