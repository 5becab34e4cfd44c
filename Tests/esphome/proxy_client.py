#!/usr/bin/env python3
"""Home Assistant's side of ESPHomeProxyIntegrationTests, with aioesphomeapi
(HA's own client library) from the test venv (scripts/deps.sh test).

  proxy_client.py receive PORT KEY CAPTURE SECONDS   (KEY "" = plaintext)
      connects with the key, reads the device info, subscribes to raw
      advertisements and compares what arrives, in order, with the
      capture's LE advertising reports (parsed here, independently of
      Earshot). Prints one JSON line: device info, counts, mismatches.
  proxy_client.py stall PORT KEY
      a Noise client (noiseprotocol directly) that handshakes, subscribes,
      then never reads again. Prints "subscribed" and sleeps.
  proxy_client.py wrong-key PORT KEY
      connects with KEY (not the proxy's); prints the error aioesphomeapi raised.
  proxy_client.py silent PORT
      connects and never sends a byte; prints "connected", then how long
      until the proxy closed the connection (at most 60 s).
  proxy_client.py garbage PORT
      sends bytes that are not a frame; prints whether the proxy closed.
  proxy_client.py load PORT KEY CLIENTS SECONDS
      CLIENTS aioesphomeapi clients in one process, each connected and
      subscribed; prints "subscribed", then after SECONDS one JSON line
      with the advertisements each received.
  proxy_client.py hold PORT COUNT SECONDS
      COUNT connections that never send a byte, each reopened as soon as the
      proxy closes it, for SECONDS; prints "holding" once all are open, then
      one JSON line: how many times they were reopened.
  proxy_client.py connect PORT KEY TIMES GAP
      aioesphomeapi connects (Hello, device info) TIMES times, GAP seconds
      apart, each given 10 s; prints one JSON line: the seconds each took,
      or its error.
  proxy_client.py flood PORT COUNT
      COUNT connections opened and closed at once, one after another;
      prints how many as JSON.
  proxy_client.py repeat-capture IN OUT TIMES
      writes a capture of IN's records repeated TIMES times, each copy
      after the last (a busier capture for the back-pressure test).
"""
import asyncio
import base64
import json
import socket
import struct
import sys
import time


def capture_reports(path):
    """(address, rssi, address_type, data) of each legacy LE advertising report."""
    d = open(path, "rb").read()
    assert d[:8] == b"btsnoop\x00", "not btsnoop"
    off, out = 16, []
    while off < len(d):
        _, incl, _, _, _ = struct.unpack(">IIIIq", d[off:off + 24])
        pkt = d[off + 24:off + 24 + incl]
        off += 24 + incl
        if len(pkt) < 4 or pkt[0] != 0x04 or pkt[1] != 0x3E or pkt[3] != 0x02:
            continue
        i, n = 5, pkt[4]
        for _ in range(n):
            addr_type = pkt[i + 1]
            address = int.from_bytes(pkt[i + 2:i + 8], "little")
            length = pkt[i + 8]
            data = pkt[i + 9:i + 9 + length]
            rssi = struct.unpack("b", pkt[i + 9 + length:i + 10 + length])[0]
            i += 10 + length
            out.append((address, rssi, addr_type, bytes(data)))
    return out


def repeat_capture(src, dst, times):
    d = open(src, "rb").read()
    records, off = [], 16
    while off < len(d):
        ol, incl, fl, dr, ts = struct.unpack(">IIIIq", d[off:off + 24])
        records.append((ol, incl, fl, dr, ts, d[off + 24:off + 24 + incl]))
        off += 24 + incl
    span = records[-1][4] - records[0][4] + 1000
    with open(dst, "wb") as f:
        f.write(d[:16])
        for k in range(times):
            for ol, incl, fl, dr, ts, pkt in records:
                f.write(struct.pack(">IIIIq", ol, incl, fl, dr, ts + k * span) + pkt)


async def receive(port, key, capture, seconds):
    from aioesphomeapi import APIClient

    expected = capture_reports(capture)
    cli = APIClient("127.0.0.1", port, None, noise_psk=key or None, client_info="earshot-test")
    await cli.connect(login=True)
    info = await cli.device_info()
    got = []
    done = asyncio.Event()

    def on_ads(msg):
        for a in msg.advertisements:
            got.append((a.address, a.rssi, a.address_type, bytes(a.data)))
        if len(got) >= len(expected):
            done.set()

    cli.subscribe_bluetooth_le_raw_advertisements(on_ads)
    print(json.dumps({"subscribed": time.time()}), flush=True)
    try:
        await asyncio.wait_for(done.wait(), seconds)
    except asyncio.TimeoutError:
        pass
    await asyncio.sleep(0.3)  # anything beyond the capture would arrive now
    mismatches = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
    await cli.disconnect()
    print(json.dumps({
        "name": info.name, "mac_address": info.mac_address,
        "bluetooth_proxy_feature_flags": info.bluetooth_proxy_feature_flags,
        "model": info.model, "esphome_version": info.esphome_version,
        "expected": len(expected), "received": len(got), "mismatches": len(mismatches),
        "first_mismatch": None if not mismatches else {
            "got": repr(got[mismatches[0]]), "expected": repr(expected[mismatches[0]])},
    }), flush=True)


async def load(port, key, clients, seconds):
    from aioesphomeapi import APIClient

    counts = [0] * clients
    conns = []
    for i in range(clients):
        cli = APIClient("127.0.0.1", port, None, noise_psk=key, client_info=f"load-{i}")
        await cli.connect(login=True)

        def on_ads(msg, i=i):
            counts[i] += len(msg.advertisements)

        cli.subscribe_bluetooth_le_raw_advertisements(on_ads)
        conns.append(cli)
    print("subscribed", flush=True)
    await asyncio.sleep(seconds)
    for cli in conns:
        await cli.disconnect()
    print(json.dumps({"received": counts}), flush=True)


async def hold(port, count, seconds):
    reopened = 0
    ready = asyncio.Event()
    opened = 0

    async def slot():
        nonlocal reopened, opened
        first = True
        while True:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.01)
                continue
            if first:
                opened += 1
                if opened == count:
                    ready.set()
                first = False
            else:
                reopened += 1
            try:
                while await reader.read(4096):
                    pass
            except OSError:
                pass
            writer.close()

    tasks = [asyncio.create_task(slot()) for _ in range(count)]
    await ready.wait()
    print("holding", flush=True)
    await asyncio.sleep(seconds)
    for t in tasks:
        t.cancel()
    print(json.dumps({"reopened": reopened}), flush=True)


async def connect_times(port, key, times, gap):
    from aioesphomeapi import APIClient

    took, errors = [], []
    for i in range(times):
        cli = APIClient("127.0.0.1", port, None, noise_psk=key or None, client_info=f"try-{i}")
        start = time.monotonic()
        try:
            await asyncio.wait_for(cli.connect(login=True), 10)
            await asyncio.wait_for(cli.device_info(), 10)
            took.append(round(time.monotonic() - start, 3))
        except Exception as e:  # noqa: BLE001
            errors.append(f"{type(e).__name__}: {e}")
        try:
            await cli.disconnect()
        except Exception:  # noqa: BLE001
            pass
        await asyncio.sleep(gap)
    print(json.dumps({"took": took, "errors": errors}), flush=True)


def flood(port, count):
    for _ in range(count):
        socket.create_connection(("127.0.0.1", port)).close()
    print(json.dumps({"opened": count}), flush=True)


def frame(payload):
    return bytes((1, len(payload) >> 8, len(payload) & 0xFF)) + payload


def read_frame(s):
    head = b""
    while len(head) < 3:
        head += s.recv(3 - len(head))
    n, body = (head[1] << 8) | head[2], b""
    while len(body) < n:
        body += s.recv(n - len(body))
    return body


def stall(port, key):
    from noise.connection import NoiseConnection

    proto = NoiseConnection.from_name(b"Noise_NNpsk0_25519_ChaChaPoly_SHA256")
    proto.set_as_initiator()
    proto.set_psks(base64.b64decode(key))
    proto.set_prologue(b"NoiseAPIInit\x00\x00")
    proto.start_handshake()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)  # fills at once
    s.connect(("127.0.0.1", port))
    s.sendall(b"\x01\x00\x00" + frame(b"\x00" + proto.write_message()))
    read_frame(s)  # server hello
    reply = read_frame(s)
    assert reply[0] == 0, reply
    proto.read_message(reply[1:])

    def send(msg_type, body):
        s.sendall(frame(proto.encrypt(struct.pack(">HH", msg_type, len(body)) + body)))

    send(1, b"")  # HelloRequest
    send(66, b"\x08\x01")  # SubscribeBluetoothLEAdvertisementsRequest(flags=1)
    print("subscribed", flush=True)
    time.sleep(3600)  # and never read again


async def wrong_key(port, key):
    from aioesphomeapi import APIClient

    cli = APIClient("127.0.0.1", port, None, noise_psk=key or None, client_info="earshot-test")
    try:
        await asyncio.wait_for(cli.connect(login=True), 10)
        print(json.dumps({"error": None}))
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"error": type(e).__name__, "message": str(e)}))


def silent(port):
    s = socket.create_connection(("127.0.0.1", port))
    start = time.monotonic()
    print("connected", flush=True)
    s.settimeout(60)
    try:
        closed = s.recv(1) == b""
    except (socket.timeout, ConnectionResetError) as e:
        closed = isinstance(e, ConnectionResetError)
    print(json.dumps({"closed": closed, "after": time.monotonic() - start}), flush=True)


def garbage(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    s.sendall(b"GET / HTTP/1.1\r\n\r\n")
    try:
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        print(json.dumps({"closed": True, "reply": data.hex()}))
    except socket.timeout:
        print(json.dumps({"closed": False}))
    except ConnectionResetError:
        print(json.dumps({"closed": True, "reply": "reset"}))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "receive":
        asyncio.run(receive(int(args[0]), args[1], args[2], float(args[3])))
    elif cmd == "stall":
        stall(int(args[0]), args[1])
    elif cmd == "wrong-key":
        asyncio.run(wrong_key(int(args[0]), args[1]))
    elif cmd == "silent":
        silent(int(args[0]))
    elif cmd == "garbage":
        garbage(int(args[0]))
    elif cmd == "load":
        asyncio.run(load(int(args[0]), args[1], int(args[2]), float(args[3])))
    elif cmd == "hold":
        asyncio.run(hold(int(args[0]), int(args[1]), float(args[2])))
    elif cmd == "connect":
        asyncio.run(connect_times(int(args[0]), args[1], int(args[2]), float(args[3])))
    elif cmd == "flood":
        flood(int(args[0]), int(args[1]))
    elif cmd == "repeat-capture":
        repeat_capture(args[0], args[1], int(args[2]))
    else:
        sys.exit(f"unknown command {cmd}")
