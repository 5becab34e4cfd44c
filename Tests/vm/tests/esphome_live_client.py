#!/usr/bin/env python3
"""Home Assistant's side of esphome_live.sh: aioesphomeapi (HA's ESPHome
client library, from the test venv) connects to the agent's Bluetooth
proxy with the key, reads the device info, subscribes to raw
advertisements for SECONDS and prints one JSON line: the feature flags and
every advertisement from ADDRESS (data as hex, RSSI, address type).

With `modes`, what Home Assistant does with FEATURE_STATE_AND_MODE: asks
for active scanning, withdraws it (asks passive), asks active again and
leaves; each state message the proxy sends is printed as a JSON line
(state, mode, configured mode) and each request as {"asked": MODE}; it
waits up to WAIT seconds for the state to follow each request and exits 1
if it does not. With `state`, it prints the state messages until one says
MODE (0 passive, 1 active), exits 1 after WAIT seconds without.

  esphome_live_client.py PORT KEY ADDRESS SECONDS
  esphome_live_client.py modes PORT KEY HOLD WAIT
  esphome_live_client.py state PORT KEY MODE WAIT
"""
import asyncio
import json
import sys
import time


async def main(port, key, address, seconds):
    from aioesphomeapi import APIClient

    want = int(address.replace(":", ""), 16)
    cli = APIClient("127.0.0.1", port, None, noise_psk=key, client_info="earshot-vm-test")
    await cli.connect(login=True)
    info = await cli.device_info()
    seen, others = [], 0

    def on_ads(msg):
        nonlocal others
        for a in msg.advertisements:
            if a.address == want:
                seen.append({"data": bytes(a.data).hex(), "rssi": a.rssi, "type": a.address_type})
            else:
                others += 1

    cli.subscribe_bluetooth_le_raw_advertisements(on_ads)
    print(json.dumps({"subscribed": time.time()}), flush=True)
    await asyncio.sleep(seconds)
    await cli.disconnect()
    print(json.dumps({
        "name": info.name, "flags": info.bluetooth_proxy_feature_flags,
        "advertisements": seen, "others": others,
    }), flush=True)


async def scanner(port, key, script, wait):
    """Connects, subscribes (the proxy answers with its scanner state) and
    runs script(ask, reached); disconnects whatever happens."""
    from aioesphomeapi import APIClient, BluetoothScannerMode

    cli = APIClient("127.0.0.1", port, None, noise_psk=key, client_info="earshot-vm-modes")
    await cli.connect(login=True)
    states = []
    changed = asyncio.Event()

    def on_state(s):
        states.append(int(s.mode))
        print(json.dumps({
            "state": int(s.state), "mode": int(s.mode),
            "configured": int(s.configured_mode), "t": time.time(),
        }), flush=True)
        changed.set()

    cli.subscribe_bluetooth_scanner_state(on_state)
    cli.subscribe_bluetooth_le_raw_advertisements(lambda _msg: None)

    async def reached(mode):
        # The latest state says MODE, within WAIT seconds.
        async def until():
            while not states or states[-1] != mode:
                changed.clear()
                await changed.wait()
        try:
            await asyncio.wait_for(until(), wait)
            return True
        except asyncio.TimeoutError:
            print(json.dumps({"timeout": mode, "t": time.time()}), flush=True)
            return False

    def ask(mode):
        print(json.dumps({"asked": mode, "t": time.time()}), flush=True)
        cli.bluetooth_scanner_set_mode(
            BluetoothScannerMode.ACTIVE if mode == 1 else BluetoothScannerMode.PASSIVE)

    try:
        return await script(ask, reached)
    finally:
        await cli.disconnect()


async def modes(port, key, hold, wait):
    async def script(ask, reached):
        if not await reached(0):  # the subscription's state: passive, as configured
            return False
        for mode in (1, 0, 1):
            ask(mode)
            if not await reached(mode):
                return False
            await asyncio.sleep(hold)
        print(json.dumps({"leaving": time.time()}), flush=True)
        return True  # leaves with its active request standing
    return await scanner(port, key, script, wait)


async def state(port, key, mode, wait):
    async def script(_ask, reached):
        return await reached(mode)
    return await scanner(port, key, script, wait)


if __name__ == "__main__":
    if sys.argv[1] == "modes":
        ok = asyncio.run(modes(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])))
        sys.exit(0 if ok else 1)
    if sys.argv[1] == "state":
        ok = asyncio.run(state(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])))
        sys.exit(0 if ok else 1)
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])))
