#!/usr/bin/python3
"""A stranger's tracker for the VM test bed (tracker_ring.sh): a GATT
application registered with bluetoothd on one adapter, serving the AirTag
sound service (7DFC9000-..., characteristic 7DFC9001-..., write) and DULT's
non-owner service (15190001-..., control point 8E0C0001-..., write and
indicate). It registers no advertisement: the test sets the Find My frame
up with raw HCI commands (from a random static address); this pulses its
advertising once a second (disable and enable at once on a raw HCI socket:
the emulator reports an advertiser only when its advertising is enabled,
and connects only to one that is on, so the off time must be nil).

A DULT write is answered by an indication, as DULT has it: Sound_Start and
Sound_Stop with a Command_Response, Success, or Invalid_state while the file
./near_owner exists; Get_Manufacturer_Name and Get_Model_Name with their
answers; Get_Identifier with Invalid_state; anything else Invalid_command.
While ./dult_refuse exists DULT writes are refused (NotPermitted). Prints one
JSON line per thing that happens. Usage: tracker_peripheral.py ADAPTER (hciN)
"""
import os
import ctypes
import signal
import struct
import sys

import dbus
import dbus.service
import dbus.mainloop.glib
from gi.repository import GLib

ROOT = "/org/earshot/fake_tracker"
# The GATT object serving its properties, and the JSON event lines: the tag's.
from tag_peripheral import CHRC, Object, say


def le16(v):
    return [v & 0xFF, v >> 8]


def dult_answer(data):
    """The indication a DULT accessory sends for the command written."""
    if len(data) < 2:
        return [0x02, 0x03, 0x00, 0x00, 0x03, 0x00]
    op = data[0] | data[1] << 8
    if op in (0x0300, 0x0301):
        status = 1 if os.path.exists("near_owner") else 0
        return [0x02, 0x03] + le16(op) + le16(status)
    if op == 0x0004:
        return le16(0x0804) + list(b"Earshot Test")
    if op == 0x0005:
        return le16(0x0805) + list(b"Ring Tag\x00")
    if op == 0x0404:
        return [0x02, 0x03] + le16(op) + le16(1)
    return [0x02, 0x03] + le16(op) + le16(0xFFFF)


class Characteristic(Object):
    def __init__(self, bus, path, service, uuid, flags, name):
        super().__init__(bus, path, CHRC, {
            "UUID": uuid, "Service": dbus.ObjectPath(service),
            "Flags": dbus.Array(flags, signature="s"),
        })
        self.name = name
        self.notifying = False

    @dbus.service.method(CHRC, in_signature="aya{sv}")
    def WriteValue(self, value, options):
        data = bytes(value)
        if self.name == "dult" and os.path.exists("dult_refuse"):
            say(event="refused", char=self.name, value=list(data))
            raise dbus.exceptions.DBusException("refused by the test", name="org.bluez.Error.NotPermitted")
        say(event="write", char=self.name, value=list(data))
        if self.name == "dult":
            # After the write's reply, as a tag answers.
            answer = dult_answer(data)
            GLib.timeout_add(50, lambda: self.indicate(answer) and False)

    @dbus.service.method(CHRC)
    def StartNotify(self):
        self.notifying = True
        say(event="notify", char=self.name, on=True)

    @dbus.service.method(CHRC)
    def StopNotify(self):
        self.notifying = False
        say(event="notify", char=self.name, on=False)

    def indicate(self, data):
        if not self.notifying:
            say(event="not_subscribed", char=self.name)
            return False
        self.PropertiesChanged(CHRC, {"Value": dbus.Array(data, signature="y")}, [])
        say(event="indicated", char=self.name, value=list(data))
        return False


class Application(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, ROOT)
        self.objects = []
        specs = [
            ("7dfc9000-7d1c-4951-86aa-8d9728f8d66c",
             [("7dfc9001-7d1c-4951-86aa-8d9728f8d66c", ["write"], "airtag")]),
            ("15190001-12f4-c226-88ed-2ac5579f2a85",
             [("8e0c0001-1d68-fb92-bf61-48377421680e", ["write", "indicate"], "dult")]),
        ]
        for i, (service, chars) in enumerate(specs):
            spath = "%s/service%d" % (ROOT, i)
            self.objects.append(Object(bus, spath, "org.bluez.GattService1",
                                       {"UUID": service, "Primary": True}))
            for j, (uuid, flags, name) in enumerate(chars):
                self.objects.append(Characteristic(bus, "%s/char%d" % (spath, j), spath, uuid, flags, name))

    @dbus.service.method("org.freedesktop.DBus.ObjectManager", out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        return {dbus.ObjectPath(o.path): {o.interface: o.props} for o in self.objects}


def raw_hci(index):
    """A raw HCI socket on hciN (through libc: this Python has no AF_BLUETOOTH)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(31, 3, 1)  # AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI
    addr = struct.pack("<HHH", 31, index, 0)  # sockaddr_hci, HCI_CHANNEL_RAW
    if fd < 0 or libc.bind(fd, addr, len(addr)) != 0:
        raise OSError(ctypes.get_errno(), "cannot open a raw HCI socket")
    return fd


def pulse(fd):
    # Only once the test has set the parameters and data up (./advertise):
    # btvirt aborted when advertising was enabled before.
    if not os.path.exists("advertise"):
        return True
    # LE Set Extended Advertising Enable (0x2039), set 0: off, then on,
    # back to back (the emulator connects an extended create connection
    # only to an extended advertiser).
    for enable in (0, 1):
        os.write(fd, bytes([0x01, 0x39, 0x20, 0x06, enable, 0x01, 0x00, 0x00, 0x00, 0x00]))
    return True


def main():
    adapter = "/org/bluez/" + sys.argv[1]
    hci = raw_hci(int(sys.argv[1][3:]))
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    Application(bus)
    loop = GLib.MainLoop()
    bus.get_object("org.bluez", adapter).RegisterApplication(
        dbus.ObjectPath(ROOT), {}, dbus_interface="org.bluez.GattManager1",
        reply_handler=lambda: say(event="ready"),
        error_handler=lambda e: (say(event="error", error=str(e)), loop.quit()))
    GLib.timeout_add(1000, lambda: pulse(hci))
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, lambda: loop.quit() or False)
    loop.run()


if __name__ == "__main__":
    main()
