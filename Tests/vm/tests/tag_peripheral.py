#!/usr/bin/python3
"""A key-finder tag for the VM test bed (tag_itag.sh): a GATT application and
an advertisement registered with bluetoothd on one adapter, serving the
button (service 0xFFE0, notify characteristic 0xFFE1), Immediate Alert
(0x1802), Link Loss (0x1803) and Battery (0x180F, 87 %).

SIGUSR1 sends a press (one byte, 0x01); SIGUSR2 a malformed two-byte
notification. While the file ./refuse exists, Alert Level writes are refused
(org.bluez.Error.NotPermitted). Prints one JSON line per thing that happens.
Usage: tag_peripheral.py ADAPTER
"""
import json
import os
import signal
import sys

import dbus
import dbus.service
import dbus.mainloop.glib
from gi.repository import GLib

ROOT = "/org/earshot/fake_tag"
CHRC = "org.bluez.GattCharacteristic1"
PROPS = "org.freedesktop.DBus.Properties"


def say(**fields):
    print(json.dumps(fields), flush=True)


def uuid16(short):
    return "0000%04x-0000-1000-8000-00805f9b34fb" % short


class Object(dbus.service.Object):
    """One GATT object: its interface's properties, served read-only."""

    def __init__(self, bus, path, interface, props):
        self.path = path
        self.interface = interface
        self.props = props
        super().__init__(bus, path)

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.props

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        return self.props[name]

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass


class Characteristic(Object):
    def __init__(self, bus, path, service, uuid, flags, name, value=b""):
        super().__init__(bus, path, CHRC, {
            "UUID": uuid, "Service": dbus.ObjectPath(service),
            "Flags": dbus.Array(flags, signature="s"),
        })
        self.name = name
        self.value = bytes(value)
        self.notifying = False

    @dbus.service.method(CHRC, in_signature="a{sv}", out_signature="ay")
    def ReadValue(self, options):
        say(event="read", char=self.name, value=list(self.value))
        return dbus.Array(self.value, signature="y")

    @dbus.service.method(CHRC, in_signature="aya{sv}")
    def WriteValue(self, value, options):
        data = bytes(value)
        if os.path.exists("refuse"):
            say(event="refused", char=self.name, value=list(data))
            raise dbus.exceptions.DBusException("refused by the test", name="org.bluez.Error.NotPermitted")
        self.value = data
        say(event="write", char=self.name, value=list(data))

    @dbus.service.method(CHRC)
    def StartNotify(self):
        self.notifying = True
        say(event="notify", char=self.name, on=True)

    @dbus.service.method(CHRC)
    def StopNotify(self):
        self.notifying = False
        say(event="notify", char=self.name, on=False)

    def send(self, data):
        if not self.notifying:
            say(event="not_subscribed", char=self.name)
            return
        self.PropertiesChanged(CHRC, {"Value": dbus.Array(data, signature="y")}, [])
        say(event="sent", char=self.name, value=list(data))


class Application(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, ROOT)
        self.objects = []
        specs = [
            (0xFFE0, [(0xFFE1, ["read", "notify"], "button", b"")]),
            # Write requests only: bluetoothd acknowledges a write to a
            # characteristic that also allows commands before the application
            # answers, so a refusal would never reach the writer.
            (0x1802, [(0x2A06, ["write"], "immediate_alert", b"\x00")]),
            (0x1803, [(0x2A06, ["read", "write"], "link_loss", b"\x00")]),
            (0x180F, [(0x2A19, ["read"], "battery", b"\x57")]),
        ]
        for i, (service, chars) in enumerate(specs):
            spath = "%s/service%d" % (ROOT, i)
            self.objects.append(Object(bus, spath, "org.bluez.GattService1",
                                       {"UUID": uuid16(service), "Primary": True}))
            for j, (uuid, flags, name, value) in enumerate(chars):
                c = Characteristic(bus, "%s/char%d" % (spath, j), spath, uuid16(uuid), flags, name, value)
                self.objects.append(c)
                if name == "button":
                    self.button = c

    @dbus.service.method("org.freedesktop.DBus.ObjectManager", out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        return {dbus.ObjectPath(o.path): {o.interface: o.props} for o in self.objects}


class Advertisement(dbus.service.Object):
    PATH = ROOT + "/advertisement"

    def __init__(self, bus):
        super().__init__(bus, self.PATH)

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return {"Type": "peripheral", "ServiceUUIDs": dbus.Array([uuid16(0xFFE0)], signature="s"),
                "LocalName": "iTag", "Discoverable": True}

    @dbus.service.method("org.bluez.LEAdvertisement1")
    def Release(self):
        say(event="advertisement_released")


def main():
    adapter = "/org/bluez/" + sys.argv[1]
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    app = Application(bus)
    adv = Advertisement(bus)
    loop = GLib.MainLoop()

    def failed(what):
        return lambda e: (say(event="error", what=what, error=str(e)), loop.quit())

    def advertise():
        bus.get_object("org.bluez", adapter).RegisterAdvertisement(
            dbus.ObjectPath(Advertisement.PATH), {},
            dbus_interface="org.bluez.LEAdvertisingManager1",
            reply_handler=lambda: say(event="ready"), error_handler=failed("advertisement"))

    bus.get_object("org.bluez", adapter).RegisterApplication(
        dbus.ObjectPath(ROOT), {}, dbus_interface="org.bluez.GattManager1",
        reply_handler=advertise, error_handler=failed("application"))
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, lambda: app.button.send(b"\x01") or True)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR2, lambda: app.button.send(b"\x01\x02") or True)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, lambda: loop.quit() or False)
    loop.run()


if __name__ == "__main__":
    main()
