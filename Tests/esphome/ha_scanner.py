#!/usr/bin/env python3
"""Home Assistant's Bluetooth stack against the proxy, by hand (not run by
swift test): habluetooth's BluetoothManager with bleak-esphome's scanner,
as Home Assistant's esphome integration sets them up. Needs a venv with
aioesphomeapi, bleak-esphome and habluetooth, e.g.
  python3 -m venv /tmp/ha-venv
  /tmp/ha-venv/bin/pip install aioesphomeapi==46.23.0 bleak-esphome==4.1.0 habluetooth==7.2.0
then, with `earshot run` serving [esphome] on PORT:
  /tmp/ha-venv/bin/python Tests/esphome/ha_scanner.py PORT KEY SECONDS
Prints the registered remote scanner and the devices the manager discovered.
"""
import asyncio
import sys

from aioesphomeapi import APIClient
from bleak_esphome import connect_scanner
from habluetooth import BluetoothManager, set_manager

async def main(port, key, seconds):
    manager = BluetoothManager()
    set_manager(manager)
    try:
        await manager.async_setup()
    except Exception as e:
        print("manager setup:", type(e).__name__, e)
    cli = APIClient("127.0.0.1", port, None, noise_psk=key)
    await cli.connect(login=True)
    info = await cli.device_info()
    data = connect_scanner(cli, info, True)
    scanner = data.scanner
    scanner.async_setup()
    manager.async_register_scanner(scanner)
    print("registered", scanner.source, scanner.name, "connectable", scanner.connectable, flush=True)
    await asyncio.sleep(seconds)
    found = scanner.discovered_devices_and_advertisement_data
    print("scanner devices", len(found))
    infos = manager.async_discovered_service_info(False)
    print("manager service infos", len(infos))
    for si in list(infos)[:50]:
        if 76 in si.manufacturer_data:
            print("ibeacon", si.address, si.rssi, si.source, si.manufacturer_data[76].hex())
            break
    for si in list(infos)[:3]:
        print("device", si.address, si.name, si.rssi, si.source)
    await cli.disconnect()

asyncio.run(main(int(sys.argv[1]), sys.argv[2], float(sys.argv[3])))
