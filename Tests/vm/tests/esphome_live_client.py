#!/usr/bin/env python3
"""Home Assistant's side of esphome_live.sh: aioesphomeapi (HA's ESPHome
client library, from the test venv) connects to the agent's Bluetooth
proxy with the key, reads the device info, subscribes to raw
advertisements for SECONDS and prints one JSON line: the feature flags and
every advertisement from ADDRESS (data as hex, RSSI, address type).

With `modes`, what Home Assistant does with FEATURE_STATE_AND_MODE, on
two connections: one only listens; the other asks for active scanning,
withdraws it (asks passive), asks active again, HOLD seconds each, and
leaves. Each state message is printed as a JSON line (the asker's mode as
"mode", the listener's as "observed", state, configured mode, time), each
request as {"asked": MODE} (0 passive, 1 active) and the leaving as
{"leaving": T}; it waits up to WAIT seconds for the state to follow each
request, and for the listener to be told passive after the asker left,
and exits 1 if one does not.

  esphome_live_client.py PORT KEY ADDRESS SECONDS
  esphome_live_client.py modes PORT KEY HOLD WAIT
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


async def modes(port, key, hold, wait):
    """Two connections, as two Home Assistants: an observer that only
    listens to the scanner state, and the asker."""
    from aioesphomeapi import APIClient, BluetoothScannerMode

    async def connect(name, tag):
        cli = APIClient("127.0.0.1", port, None, noise_psk=key, client_info=name)
        await cli.connect(login=True)
        states, changed = [], asyncio.Event()

        def on_state(s):
            states.append(int(s.mode))
            print(json.dumps({
                tag: int(s.mode), "state": int(s.state),
                "configured": int(s.configured_mode), "t": time.time(),
            }), flush=True)
            changed.set()

        cli.subscribe_bluetooth_scanner_state(on_state)
        # The subscription is what the proxy answers with its state.
        cli.subscribe_bluetooth_le_raw_advertisements(lambda _msg: None)
        return cli, states, changed

    async def reached(states, changed, mode, tag):
        # The latest state says MODE, within WAIT seconds.
        async def until():
            while not states or states[-1] != mode:
                changed.clear()
                await changed.wait()
        try:
            await asyncio.wait_for(until(), wait)
            return True
        except asyncio.TimeoutError:
            print(json.dumps({"timeout": mode, "who": tag, "t": time.time()}), flush=True)
            return False

    (observer, seen, seen_changed), (asker, states, changed) = await asyncio.gather(
        connect("earshot-vm-observer", "observed"), connect("earshot-vm-modes", "mode"))
    try:
        # Both start from the configured mode: passive.
        if not (await reached(seen, seen_changed, 0, "observed")
                and await reached(states, changed, 0, "mode")):
            return False
        for mode in (1, 0, 1):
            print(json.dumps({"asked": mode, "t": time.time()}), flush=True)
            asker.bluetooth_scanner_set_mode(
                BluetoothScannerMode.ACTIVE if mode == 1 else BluetoothScannerMode.PASSIVE)
            if not await reached(states, changed, mode, "mode"):
                return False
            await asyncio.sleep(hold)
        # The asker leaves with its active request standing: the observer
        # must be told passive.
        print(json.dumps({"leaving": time.time()}), flush=True)
        await asker.disconnect()
        return await reached(seen, seen_changed, 0, "observed")
    finally:
        await asker.disconnect()
        await observer.disconnect()


if __name__ == "__main__":
    if sys.argv[1] == "modes":
        ok = asyncio.run(modes(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])))
        sys.exit(0 if ok else 1)
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])))
