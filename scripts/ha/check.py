#!/usr/bin/env python3
"""Judges what a real Home Assistant recorded during scripts/ha-real.sh.

Reads the run's work directory: HA's recorder database (states history),
its entity and device registries (.storage), HA's log, every MQTT message
the broker carried (mqtt.jsonl, from mosquitto_sub -F '%U %j'), the agents'
logs and the marks the script wrote (one "NAME UNIX_TIME [VALUE]" a line).
Prints figures, the Earshot entities, and one PASS/FAIL line per check;
exits 1 if any check fails.
"""

import argparse
import datetime
import json
import os
import re
import sqlite3
import sys

UNAVAILABLE = "unavailable"
UNKNOWN = "unknown"


def fmt(ts):
    if ts is None:
        return "-"
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


class Run:
    def __init__(self, work, base):
        self.work = work
        self.base = base
        self.marks = {}
        self.mark_values = {}
        with open(os.path.join(work, "marks.txt")) as f:
            for line in f:
                parts = line.split(None, 2)
                if len(parts) >= 2:
                    self.marks[parts[0]] = float(parts[1])
                    self.mark_values[parts[0]] = parts[2].strip() if len(parts) > 2 else ""
        self.ha_dir = os.path.join(work, "ha")
        self.entities, self.deleted_entities = self._registry("core.entity_registry", "entities", "deleted_entities")
        self.devices, _ = self._registry("core.device_registry", "devices", "deleted_devices")
        self.device_by_id = {d["id"]: d for d in self.devices}
        self.history = self._history()
        self.messages = self._messages()
        self.ha_log = self._read("ha.log")

    def _read(self, name):
        try:
            with open(os.path.join(self.work, name), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def _registry(self, key, items, deleted):
        path = os.path.join(self.ha_dir, ".storage", key)
        try:
            with open(path) as f:
                data = json.load(f)["data"]
        except FileNotFoundError:
            return [], []
        return data.get(items, []), data.get(deleted, [])

    def _history(self):
        """entity_id -> [(last_updated_ts, state, attributes dict)] in order."""
        db = os.path.join(self.ha_dir, "home-assistant_v2.db")
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows = con.execute(
            """SELECT m.entity_id, s.last_updated_ts, s.state, a.shared_attrs
               FROM states s JOIN states_meta m ON s.metadata_id = m.metadata_id
               LEFT JOIN state_attributes a ON s.attributes_id = a.attributes_id
               ORDER BY s.last_updated_ts, s.state_id"""
        ).fetchall()
        con.close()
        history = {}
        for entity_id, ts, state, attrs in rows:
            try:
                attributes = json.loads(attrs) if attrs else {}
            except ValueError:
                attributes = {}
            history.setdefault(entity_id, []).append((ts, state, attributes))
        return history

    def _messages(self):
        """[(time, topic, payload, retained)] as the recording subscriber got them."""
        out = []
        for line in self._read("mqtt.jsonl").splitlines():
            stamp, _, body = line.partition(" ")
            try:
                m = json.loads(body)
            except ValueError:
                continue
            payload = m.get("payload", "")
            if payload is None:  # an empty payload (a retained message cleared)
                payload = ""
            elif not isinstance(payload, str):
                payload = json.dumps(payload, separators=(",", ":"))
            out.append((float(stamp), m.get("topic", ""), payload, bool(m.get("retain"))))
        return out

    # Earshot's entities: those of devices made by Earshot.
    def earshot_devices(self):
        return [d for d in self.devices if (d.get("manufacturer") or "").lower() == "earshot"]

    def agent_device_ids(self):
        return {
            d["id"]
            for d in self.earshot_devices()
            if (d.get("model") or "").lower().startswith("earshot")
            or (d.get("name") or "").lower().startswith("earshot")
        }

    def earshot_entities(self):
        ids = {d["id"] for d in self.earshot_devices()}
        return [e for e in self.entities if e.get("device_id") in ids]

    def device_name(self, entity):
        d = self.device_by_id.get(entity.get("device_id"))
        if not d:
            return None
        return d.get("name_by_user") or d.get("name")

    def state_at(self, entity_id, ts):
        last = None
        for t, state, _ in self.history.get(entity_id, []):
            if t <= ts:
                last = state
            else:
                break
        return last

    def friendly_name(self, entity_id):
        for _, _, attrs in reversed(self.history.get(entity_id, [])):
            if "friendly_name" in attrs:
                return attrs["friendly_name"]
        return None

    def between(self, entity_id, a, b):
        return [(t, s) for t, s, _ in self.history.get(entity_id, []) if a <= t <= b]


class Report:
    def __init__(self):
        self.results = []

    def check(self, key, ok, title, details=()):
        line = f"{'PASS' if ok else 'FAIL'} {key}: {title}"
        self.results.append((key, ok, title))
        for d in details:
            print(f"    {d}")
        print(line)
        print()


def section(title):
    print(f"== {title}")


def shown(state):
    return "(removed)" if state is None else state


def sequence(run, entity_id, a, b, origin):
    """The changes in [a, b], after the state in effect at a."""
    rows = run.between(entity_id, a, b)
    before = run.state_at(entity_id, a)
    head = [f"{'before':>12} {'':>13} {shown(before)}"] if before is not None or not rows else []
    return head + [f"{fmt(t)} ({t - origin:+7.3f} s) {shown(s)}" for t, s in rows]


def region_entities(run):
    """The regions' binary sensors (also ones since removed from the registry)."""
    found = {}
    for e in run.entities + run.deleted_entities:
        uid = e.get("unique_id") or ""
        eid = e.get("entity_id") or ""
        if eid.startswith("binary_sensor.") and "region" in uid:
            found[eid] = uid
    for eid in run.history:
        if eid.startswith("binary_sensor.") and "region" in eid and eid not in found:
            found[eid] = ""
    return sorted(found)


def check_restart_flap(run, report):
    section("1. restart: a stale state must not become current")
    details = []
    bad = []
    restarts = [k for k in ("start2", "start3") if k in run.marks]
    for entity_id in region_entities(run):
        for k in restarts:
            t0 = run.marks[k]
            rows = [(t0 - 3, run.state_at(entity_id, t0 - 3))] + run.between(entity_id, t0 - 3, t0 + 12)
            details.append(f"{entity_id} around {k} ({fmt(t0)}):")
            details += ["  " + s for s in sequence(run, entity_id, t0 - 3, t0 + 12, t0)] or ["  (no change)"]
            for i in range(1, len(rows) - 1):
                (_, prev), (t1, s1), (t2, s2) = rows[i - 1], rows[i], rows[i + 1]
                if prev == UNAVAILABLE and s1 in ("on", "off") and s2 == UNAVAILABLE and t2 - t1 < 1.0:
                    bad.append(f"{entity_id} at {k}: unavailable -> {s1} at {fmt(t1)} -> unavailable "
                               f"{(t2 - t1) * 1000:.0f} ms later")
    details += ["stale flap: " + b for b in bad]
    report.check("1", not bad and bool(restarts) and bool(region_entities(run)),
                 f"no unavailable -> on/off -> unavailable (< 1 s) at a restart ({len(bad)} found)", details)


def check_first_events(run, report):
    section("2. run 2's first state events reach BASE/events")
    a, b = run.marks.get("start2", 0), run.marks.get("stop2", 0)
    topic = run.base + "/events"
    events = []
    for t, tp, payload, _ in run.messages:
        if tp == topic and a <= t <= b:
            try:
                events.append((t, json.loads(payload)))
            except ValueError:
                events.append((t, {"raw": payload}))
    states = [(t, e) for t, e in events if e.get("event") == "state"]
    first = {}
    for t, e in states:
        first.setdefault(e.get("region"), (t, e.get("state")))
    details = [f"{len(events)} events on {topic} during run 2, {len(states)} of them 'state'; the first:"]
    details += [f"  {fmt(t)} ({t - a:+.3f} s) {json.dumps(e)}" for t, e in events[:6]]
    run1 = [e for t, tp, p, _ in run.messages
            if tp == topic and run.marks.get("start1", 0) <= t <= run.marks.get("stop1", 0)
            for e in [p] if '"state"' in p]
    details.append(f"(run 1 had {len(run1)} 'state' events)")
    ok = all(first.get(r, (0, None))[1] == UNKNOWN for r in ("desk", "lab"))
    report.check("2", ok, "run 2 published 'state … unknown' for desk and lab on BASE/events: "
                 + ", ".join(f"{r}={first.get(r, (0, 'none'))[1]}" for r in ("desk", "lab")), details)


def check_tracker(run, report):
    section("3. rooms device_tracker: a room name or not_home, never JSON")
    trackers = [e["entity_id"] for e in run.earshot_entities() if e["entity_id"].startswith("device_tracker.")]
    rooms = set()
    for _, tp, payload, _ in run.messages:
        if tp.startswith("earshot-test/rooms/beacon/") and tp.endswith("/state"):
            try:
                room = json.loads(payload).get("room")
            except (ValueError, AttributeError):
                room = None
            if room:
                rooms.add(room)
    details = [f"rooms the aggregator published: {sorted(rooms) or 'none'}"]
    bad, named = [], False
    for eid in trackers:
        states = [s for _, s, _ in run.history.get(eid, [])]
        details.append(f"{eid}: {len(states)} states; distinct: {list(dict.fromkeys(states))}")
        for s in states:
            if s in (UNKNOWN, UNAVAILABLE):
                continue
            if "{" in s or '"' in s or len(s) > 64:
                bad.append(f"{eid} = {s}")
            elif s in rooms:
                named = True
    for eid in run.history:
        if "room" in eid and eid.startswith("sensor."):
            details.append(f"({eid}, the room sensor: {list(dict.fromkeys(s for _, s, _ in run.history[eid]))})")
    ok = bool(trackers) and not bad and named
    why = ("no rooms device_tracker" if not trackers else
           f"{len(bad)} JSON state(s)" if bad else
           "never showed a room name" if not named else "room names / not_home only")
    report.check("3", ok, f"rooms device_tracker state: {why}", details + [f"bad: {b}" for b in bad[:5]])


def check_mqtt_room(run, report):
    section("R. HA's mqtt_room on the agent's ESPresense sightings")
    eid = "sensor.espresense_desk_beacon"
    states = [(ts, st, attrs) for ts, st, attrs in run.history.get(eid, [])]
    distinct = list(dict.fromkeys(st for _, st, _ in states))
    sightings = [tp for _, tp, _, _ in run.messages if tp.startswith("espresense/devices/")]
    distances = [a.get("distance") for _, st, a in states if st == "office"]
    refused = [l for l in run.ha_log.splitlines() if "required key not provided" in l]
    details = [f"{len(sightings)} ESPresense sighting(s) on the broker, topics {sorted(set(sightings))[:2]}",
               f"{eid}: {len(states)} states; distinct: {distinct}; distances while office: "
               f"{distances[:3]}{'…' if len(distances) > 3 else ''}",
               f"{len(refused)} 'required key not provided' line(s) in HA's log"]
    ok = "office" in distinct and bool(sightings) and not refused
    report.check("R", ok, f"(28) mqtt_room placed the beacon in the agent's room: {'office' in distinct}", details)


def check_telemetry(run, report):
    section("T. an Eddystone beacon's TLM battery and temperature in HA")
    found = {}
    for e in run.entities:
        uid = e.get("unique_id") or ""
        for kind in ("battery", "temperature"):
            if uid.endswith(f"beacon_eddystone-8f2c1a3e5b7d4e90a1c2-0000000000a1_{kind}"):
                found[kind] = e
    details, values = [], {}
    for kind, e in found.items():
        states = [st for _, st, _ in run.history.get(e["entity_id"], [])]
        numbers = [float(st) for st in states if st not in ("unknown", "unavailable")]
        values[kind] = numbers
        details.append(f"{e['entity_id']} ({e.get('original_device_class') or e.get('device_class')}, "
                       f"{e.get('unit_of_measurement')}): states {list(dict.fromkeys(states))}")
    ok = (values.get("battery") and set(values["battery"]) == {2950.0}
          and values.get("temperature") and set(values["temperature"]) == {21.5})
    report.check("T", bool(ok), "(28) HA recorded the beacon's battery 2950 mV and 21.5 °C: "
                 f"{sorted(set(values.get('battery', [])))}, {sorted(set(values.get('temperature', [])))}",
                 details or ["no battery or temperature entity for the Eddystone beacon"])


def check_trackers(run, report):
    section("F. a tracker that follows: HA's sensor and event ([trackers] mqtt)")
    sensor = event = None
    for e in run.entities:
        uid = e.get("unique_id") or ""
        if uid.endswith("_trackers_following") and e["entity_id"].startswith("sensor."):
            sensor = e["entity_id"]
        if uid.endswith("_tracker_following") and e["entity_id"].startswith("event."):
            event = e["entity_id"]
    details = [f"sensor {sensor}, event {event}"]
    t0, t1 = run.marks.get("trackers_start", 0), run.marks.get("trackers_stop", 0)
    clear = run.marks.get("trackers_clear", 0)
    counts = [(t, s, a) for t, s, a in run.history.get(sensor, []) if t0 <= t <= t1 + 1]
    details += [f"  {fmt(t)} {s} {json.dumps(a.get('trackers'))}" for t, s, a in counts]
    following = [(t, a) for t, s, a in counts if s == "1" and t < clear]
    cleared = [t for t, s, _ in counts if s == "0" and t >= clear]
    tracker = ((following[-1][1].get("trackers") or [{}])[0]) if following else {}
    sensor_ok = (bool(following) and bool(cleared) and tracker.get("tracker") == 1
                 and tracker.get("protocol") == "find_my" and tracker.get("kind") == "airtag"
                 and tracker.get("first_seen") == "2026-01-01T00:00:00Z" and tracker.get("places") == 3
                 and "address" not in tracker)
    fired = [(t, s, a) for t, s, a in run.history.get(event, [])
             if t0 <= t <= t1 + 1 and s not in (UNKNOWN, UNAVAILABLE)]
    details += [f"  {fmt(t)} {event} {s} {json.dumps(a)}" for t, s, a in fired]
    distinct = {s for _, s, _ in fired}
    event_ok = (len(distinct) == 1 and all(a.get("event_type") == "following" and a.get("tracker") == 1
                                           and a.get("kind") == "airtag" for _, _, a in fired))
    report.check("F", sensor_ok and event_ok,
                 f"(issue 40) the sensor showed 1 following, then 0 after the clear: {sensor_ok}; "
                 f"the event fired once with the tracker: {event_ok} ({len(distinct)} firing(s))", details)


def check_names(run, report):
    section("4. no friendly name repeats its device name")
    bad, details = [], []
    for e in run.earshot_entities():
        device = run.device_name(e) or ""
        friendly = run.friendly_name(e["entity_id"])
        original = e.get("original_name")
        details.append(f"{e['entity_id']}: device '{device}', name {json.dumps(original)}, "
                       f"friendly_name {json.dumps(friendly)}")
        if device and ((friendly or "").count(device) >= 2 or (original or "").startswith(device)):
            bad.append(e["entity_id"])
    report.check("4", not bad and bool(run.earshot_entities()),
                 f"{len(bad)} of {len(run.earshot_entities())} entities repeat their device name"
                 + (f": {', '.join(bad)}" if bad else ""), details)


def check_no_matching_payload(run, report):
    section("5. HA's log: no 'No matching payload found for entity'")
    lines = [l for l in run.ha_log.splitlines() if "No matching payload found for entity" in l]
    details = [l[:260] for l in lines[:6]]
    if len(lines) > 6:
        details.append(f"... {len(lines) - 6} more")
    report.check("5", not lines, f"{len(lines)} 'No matching payload found' line(s)", details)


def check_find_and_volume(run, report):
    section("6. find-phone ringing shown in HA; the volume number after a refused command")
    agent = run.agent_device_ids()
    ents = [e for e in run.entities if e.get("device_id") in agent]
    ring, found = run.marks.get("ring", 0), run.marks.get("found", 0)
    shown = None
    details = []
    for e in ents:
        eid = e["entity_id"]
        after_ring = [s for t, s in run.between(eid, ring, found)]
        after_found = [s for t, s in run.between(eid, found, found + 10)]
        if "ringing" in after_ring:
            details.append(f"{eid}:")
            details += ["  " + s for s in sequence(run, eid, ring - 1, found + 10, ring)]
            if "idle" in after_found:
                shown = eid
    find_topic = run.base + "/find/state"
    details.append("the agent's " + find_topic + ": " + ", ".join(
        f"{fmt(t)} {p}" for t, tp, p, _ in run.messages
        if tp == find_topic and run.marks.get("start2", 0) <= t <= run.marks.get("stop2", 0)))
    report.check("6a", shown is not None,
                 f"an HA entity goes to 'ringing' and back to 'idle': {shown or 'none of the agent device'}", details)

    numbers = [e["entity_id"] for e in ents if e["entity_id"].startswith("number.")]
    details = []
    ok_refused = ok_accepted = False
    volume_topic = run.base + "/volume/state"
    details.append("the agent's " + volume_topic + " during run 2: " + ", ".join(
        f"{fmt(t)} {p}" for t, tp, p, _ in run.messages
        if tp == volume_topic and run.marks.get("start2", 0) <= t <= run.marks.get("stop2", 0)))
    cmd = run.base + "/command/volume"
    details.append("commands on " + cmd + ": " + ", ".join(
        f"{fmt(t)} {p}" for t, tp, p, _ in run.messages if tp == cmd))
    for k in ("volume_before", "volume_refused", "volume_actual", "found", "volume_after_found", "volume_accepted"):
        if k in run.marks:
            v = run.mark_values.get(k)
            details.append(f"mark {k}: {fmt(run.marks[k])}" + (f" (retained volume: {v or 'none'})" if k.startswith("volume_") and k not in ("volume_refused", "volume_accepted") else ""))
    for eid in numbers:
        details.append(f"{eid} during run 2:")
        details += ["  " + s for s in sequence(run, eid, run.marks.get("start2", 0), run.marks.get("stop2", 0) + 1, ring)]
        t = run.marks.get("volume_actual")
        actual = run.mark_values.get("volume_actual")
        ha = run.state_at(eid, t) if t else None
        details.append(f"at {fmt(t)}: HA {ha}, agent {actual or 'none'}")
        try:
            ok_refused = actual not in (None, "") and float(ha) == float(actual)
        except (TypeError, ValueError):
            ok_refused = False
        ta = run.marks.get("volume_accepted", 0)
        ok_accepted = any(s == "40" for _, s in run.between(eid, ta, ta + 6))
    report.check("6b", bool(numbers) and ok_refused,
                 "after the volume command refused while ringing, HA's number equals the agent's volume"
                 + ("" if numbers else ": no number entity"), details)
    report.check("6c", bool(numbers) and ok_accepted,
                 "(harness) the volume set through HA after found reaches HA's number (40)")


def check_removed_region(run, report):
    section("8. after the reload that removes region lab, its entity is gone from HA")
    present = [e for e in run.entities if (e.get("unique_id") or "").endswith("region_lab")]
    deleted = [e for e in run.deleted_entities if (e.get("unique_id") or "").endswith("region_lab")]
    details = []
    for name in ("discovery-before-reload.txt", "discovery-after-reload.txt"):
        topics = [t for t in run._read(name).split() if "region_lab" in t]
        details.append(f"{name[:-4]}: retained {topics or 'none'} for region_lab")
    t0 = run.marks.get("reload", 0)
    clears = [f"{fmt(t)} {tp} '{p}'" for t, tp, p, _ in run.messages
              if t >= t0 and "region_lab" in tp and tp.startswith("homeassistant/")]
    details.append("discovery messages for region_lab after the reload: " + (", ".join(clears) or "none"))
    details += [l[:200] for l in run.ha_log.splitlines() if "Removing component" in l]
    for e in present:
        eid = e["entity_id"]
        details.append(f"still registered: {eid}, state after the reload: "
                       f"{[s for _, s in run.between(eid, t0, run.marks.get('kill9', t0 + 10))] or 'unchanged'}"
                       f", at the end: {run.state_at(eid, 1e12)}")
    details += [f"in deleted_entities: {e.get('entity_id')}" for e in deleted]
    existed = present or deleted or any("region_lab" in eid for eid in run.history)
    report.check("8", existed and not present,
                 "region lab's entity " + ("is still in the entity registry" if present else
                                           "was removed" if existed else "never existed in HA"), details)


def check_twins(run, report):
    section("9. two agents with the default client_id both stay connected")
    details, bad = [], 0
    for name in ("twin-a", "twin-b"):
        log = run._read(name + ".log")
        lost = [l for l in log.splitlines() if "lost; reconnecting" in l or "reconnect" in l]
        bad += len(lost)
        details.append(f"{name}.log: {len(lost)} reconnect line(s)" + (f", e.g. {lost[0][:160]}" if lost else ""))
        st = run.base.rsplit("/", 1)[0] + f"/{name}/status"
        flips = [p for t, tp, p, _ in run.messages if tp == st]
        details.append(f"  {st}: {len(flips)} message(s): {' '.join(flips[:12])}{' …' if len(flips) > 12 else ''}")
    a, b = run.marks.get("twins", 0), run.marks.get("twins_end", 0)
    takeovers = []
    for l in run._read("mosquitto.log").splitlines():
        m = re.match(r"(\d+):", l)
        if m and a - 1 <= int(m.group(1)) <= b + 1 and "already connected" in l:
            takeovers.append(l)
    details.append(f"mosquitto.log: {len(takeovers)} 'already connected, closing old connection' in the 12 s"
                   + (f", e.g. {takeovers[0][:140]}" if takeovers else ""))
    # Whether they shared a client id at all (the check is only meaningful then).
    ids = re.findall(r"New client connected from \S+ as (\S+)", run._read("mosquitto.log"))
    details.append(f"client ids seen by the broker (mosquitto_sub/pub's auto-… left out): "
                   f"{sorted(i for i in set(ids) if not i.startswith('auto-'))}")
    online = all(any(tp == run.base.rsplit("/", 1)[0] + f"/{n}/status" and p == "online"
                     for _, tp, p, _ in run.messages) for n in ("twin-a", "twin-b"))
    if not online:
        details.append("not both twins said online")
    report.check("9", online and bad == 0 and not takeovers,
                 f"{bad} reconnect(s) in the agents' logs, {len(takeovers)} takeover(s) at the broker"
                 + ("" if online else ", not both online"), details)


def check_ha_log_problems(run, report):
    section("E. HA's log: no warning or error from mqtt or templates")
    lines = [l for l in run.ha_log.splitlines()
             if re.search(r" (WARNING|ERROR|CRITICAL) ", l)
             and re.search(r"\[homeassistant\.(components\.mqtt|helpers\.template)", l)]
    details = [l[:260] for l in lines[:8]] + ([f"... {len(lines) - 8} more"] if len(lines) > 8 else [])
    report.check("E", not lines, f"(extra) {len(lines)} warning/error line(s) from HA's mqtt or template code", details)


def discovery_configs(run):
    """unique_id -> (topic, config) of the last discovery config carrying it."""
    out = {}
    for _, topic, payload, _ in run.messages:
        if not topic.startswith("homeassistant/") or not topic.endswith("/config") or not payload:
            continue
        try:
            config = json.loads(payload)
        except ValueError:
            continue
        if isinstance(config, dict) and config.get("unique_id"):
            out[config["unique_id"]] = (topic, config)
    return out


def check_entity_ids(run, report):
    section("I. entity ids as chosen: each Earshot entity's id is its discovery config's default_entity_id")
    configs = discovery_configs(run)
    # An entity already in a carried registry keeps the id it had (check U).
    carried = run._read("carried-entity-registry.json")
    carried = {e["unique_id"] for e in json.loads(carried)["data"]["entities"]} if carried else set()
    details, bad, seen = [], 0, 0
    for e in run.earshot_entities():
        if e.get("unique_id") in carried:
            continue
        topic, config = configs.get(e.get("unique_id"), (None, {}))
        want = config.get("default_entity_id")
        seen += 1
        if want != e["entity_id"]:
            bad += 1
            details.append(f"{e['entity_id']}: discovery says {want!r} ({topic})")
    if carried and not seen:
        report.check("I", True, "(extra) every Earshot entity came from the carried registry (check U)")
        return
    report.check("I", seen > 0 and bad == 0,
                 f"(extra) {seen - bad} of {seen} entity ids equal their default_entity_id", details)


def check_carried_registry(run, report):
    """With a registry carried over from an earlier run (another HA, an older
    agent), every entity it held keeps its entity id."""
    before = run._read("carried-entity-registry.json")
    if not before:
        return
    section("U. a registry carried over (an upgrade): every entity keeps its id")
    old = {e["unique_id"]: e["entity_id"] for e in json.loads(before)["data"]["entities"]
           if e.get("platform") == "mqtt"}
    now = {e.get("unique_id"): e["entity_id"] for e in run.entities}
    details, kept = [], 0
    for uid, eid in sorted(old.items()):
        if now.get(uid) == eid:
            kept += 1
        else:
            details.append(f"{uid}: {eid} -> {now.get(uid)}")
    report.check("U", bool(old) and kept == len(old), f"(extra) {kept} of {len(old)} carried entity ids kept", details)


def check_offline(run, report):
    section("N. HA stays offline: no socket of HA's reaches past loopback")
    text = run._read("ha-sockets.txt")
    samples = text.count("# ")
    outside, total = [], 0
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        total += 1
        fields = line.split()
        # ss -tunapH: NETID STATE RECV-Q SEND-Q LOCAL PEER PROCESS
        peer = fields[5] if len(fields) > 5 else ""
        host = peer.rsplit(":", 1)[0].strip("[]")
        if host not in ("*", "0.0.0.0", "::", "127.0.0.1", "::1", "::ffff:127.0.0.1") and not host.startswith("127."):
            outside.append(line.strip()[:160])
    report.check("N", samples > 0 and not outside,
                 f"(extra) {total} socket(s) of HA in {samples} samples, {len(outside)} to a non-loopback peer",
                 outside[:5])


def check_last_will(run, report):
    section("K. kill -9: the agent's entities become unavailable (the last will)")
    t = run.marks.get("kill9")
    details, ok = [], bool(t)
    agent = run.agent_device_ids()
    for e in run.entities:
        if e.get("device_id") in agent and t:
            s = run.state_at(e["entity_id"], t + 5)
            details.append(f"{e['entity_id']}: {run.state_at(e['entity_id'], t)} -> {s} at +5 s")
            ok = ok and s == UNAVAILABLE
    report.check("K", ok and bool(details), "(extra) every entity of the agent's device is unavailable 5 s after kill -9",
                 details)


def entities_table(run):
    section("Earshot devices and entities in HA (registry, final state)")
    for d in run.earshot_devices():
        print(f"  device '{d.get('name')}' model '{d.get('model')}' sw {d.get('sw_version')} "
              f"identifiers {d.get('identifiers')}")
        for e in run.entities:
            if e.get("device_id") != d["id"]:
                continue
            eid = e["entity_id"]
            hist = run.history.get(eid, [])
            print(f"    {eid:<58} {str(run.state_at(eid, 1e12)):<12} {len(hist):>4} states  "
                  f"friendly_name {json.dumps(run.friendly_name(eid))}")
    with open(os.path.join(run.work, "entity-ids.txt"), "w") as f:
        f.writelines(f"{e['entity_id']}\n" for e in sorted(run.earshot_entities(), key=lambda e: e["entity_id"]))
    gone = [e for e in run.deleted_entities if "earshot" in (e.get("unique_id") or "")]
    for e in gone:
        print(f"    (deleted) {e.get('entity_id')} unique_id {e.get('unique_id')}")
    print()


def figures(run, args):
    section("Figures")
    m = run.marks
    init = re.search(r"Home Assistant initialized in ([0-9.]+)s", run.ha_log)
    print(f"  HA venv install/reuse: {args.install_seconds} s")
    if "ha_up" in m:
        print(f"  HA start: {m['ha_up'] - m['ha_launch']:.1f} s from launch to 'initialized' "
              f"(HA says {init.group(1) if init else '?'} s); MQTT connected at +{m.get('ha_mqtt', 0) - m['ha_launch']:.1f} s")
    if "ha_stopped" in m:
        print(f"  HA stop: {m['ha_stopped'] - m['ha_stop']:.1f} s")
    print(f"  total script time: {args.run_seconds} s (before these checks)")
    rows = sum(len(v) for v in run.history.values())
    print(f"  recorder: {rows} state rows of {len(run.history)} entities; registry: {len(run.entities)} entities, "
          f"{len(run.devices)} devices; MQTT messages recorded: {len(run.messages)}")
    order = sorted(m.items(), key=lambda kv: kv[1])
    t0 = m.get("ha_launch", order[0][1] if order else 0)
    print("  marks: " + ", ".join(f"{k} +{v - t0:.1f}" for k, v in order))
    errors = [l for l in run.ha_log.splitlines() if " ERROR " in l]
    agent = [l for l in run.ha_log.splitlines()
             if re.search(r" (WARNING|ERROR|CRITICAL) ", l) and "earshot" in l.lower()
             and "earshot_test" not in l]
    print(f"  HA log: {len(run.ha_log.splitlines())} lines, {len(errors)} ERROR, "
          f"{len(agent)} warning/error line(s) naming earshot (not the test's own calls)")
    for l in agent[:5]:
        print(f"    {l[:220]}")
    for l in errors[:5]:
        print(f"    {l[:220]}")
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--host-slug", default="")
    ap.add_argument("--install-seconds", default="?")
    ap.add_argument("--run-seconds", default="?")
    args = ap.parse_args()
    run = Run(args.work, args.base)
    figures(run, args)
    entities_table(run)
    report = Report()
    for check in (check_restart_flap, check_first_events, check_tracker, check_mqtt_room,
                  check_telemetry, check_trackers, check_names,
                  check_no_matching_payload, check_find_and_volume, check_removed_region,
                  check_twins, check_last_will, check_ha_log_problems, check_offline,
                  check_entity_ids, check_carried_registry):
        try:
            check(run, report)
        except Exception as e:  # a broken check is a failed one, the others still run
            report.check(check.__name__, False, f"check raised {type(e).__name__}: {e}")
    section("Summary")
    for key, ok, title in report.results:
        print(f"{'PASS' if ok else 'FAIL'} {key}: {title}")
    failed = sum(1 for _, ok, _ in report.results if not ok)
    print(f"{len(report.results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
