#!/usr/bin/env python3
"""Home Assistant's side of esphome_live.sh: aioesphomeapi (HA's ESPHome
client library, from the test venv) connects to the agent's Bluetooth
proxy with the key, reads the device info, subscribes to raw
advertisements for SECONDS and prints one JSON line: the feature flags and
every advertisement from ADDRESS (data as hex, RSSI, address type).

  esphome_live_client.py PORT KEY ADDRESS SECONDS
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


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])))
