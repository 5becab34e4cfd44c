#!/usr/bin/env python3
"""Browses _esphomelib._tcp.local. with python-zeroconf, the library Home
Assistant's zeroconf integration uses (its esphome manifest asks for this
type), for SECONDS; prints one JSON line per resolved service: name,
addresses, port, TXT properties. Used by scripts/esphome-mdns.sh.

  zeroconf_browse.py SECONDS
"""
import json
import sys
import time

from zeroconf import ServiceBrowser, ServiceListener, Zeroconf

TYPE = "_esphomelib._tcp.local."


class Listener(ServiceListener):
    def __init__(self, zc):
        self.zc = zc
        self.seen = set()

    def add_service(self, zc, type_, name):
        info = zc.get_service_info(type_, name, timeout=3000)
        if info is None or name in self.seen:
            return
        self.seen.add(name)
        print(json.dumps({
            "name": name, "addresses": info.parsed_addresses(), "port": info.port,
            "properties": {k.decode(): (v or b"").decode() for k, v in info.properties.items()},
        }), flush=True)

    def update_service(self, zc, type_, name):
        self.add_service(zc, type_, name)

    def remove_service(self, zc, type_, name):
        pass


zc = Zeroconf()
ServiceBrowser(zc, TYPE, Listener(zc))
time.sleep(float(sys.argv[1]))
zc.close()
