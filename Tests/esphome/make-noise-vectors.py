#!/usr/bin/env python3
"""Writes noise-vectors.json: Noise_NNpsk0_25519_ChaChaPoly_SHA256 handshakes
and transport messages made by the `noiseprotocol` package (the library
aioesphomeapi uses) with fixed keys, for ESPHomeNoiseVectorTests.

Not needed at swift-test time: the JSON is committed. To regenerate:
  /usr/local/lib/earshot-test/esphome-venv/bin/python Tests/esphome/make-noise-vectors.py
"""
import hashlib
import json
import os

from noise.connection import Keypair, NoiseConnection

NAME = b"Noise_NNpsk0_25519_ChaChaPoly_SHA256"
PROLOGUE = b"NoiseAPIInit\x00\x00"


def key(label: str) -> bytes:
    # Fixed, distinct 32-byte values: reproducible vectors.
    return hashlib.sha256(label.encode()).digest()


def vector(index: int, payloads: list[bytes]) -> dict:
    psk = key(f"psk {index}")
    ie, re = key(f"initiator ephemeral {index}"), key(f"responder ephemeral {index}")
    i = NoiseConnection.from_name(NAME)
    i.set_as_initiator()
    i.set_psks(psk)
    i.set_prologue(PROLOGUE)
    i.set_keypair_from_private_bytes(Keypair.EPHEMERAL, ie)
    r = NoiseConnection.from_name(NAME)
    r.set_as_responder()
    r.set_psks(psk)
    r.set_prologue(PROLOGUE)
    r.set_keypair_from_private_bytes(Keypair.EPHEMERAL, re)
    i.start_handshake()
    r.start_handshake()
    m1 = i.write_message()
    r.read_message(m1)
    m2 = r.write_message()
    i.read_message(m2)
    assert i.handshake_finished and r.handshake_finished
    responder_pub = r.noise_protocol.keypairs["e"].public_bytes
    transport = []
    for n, p in enumerate(payloads):
        # Alternate directions; each counts its own nonces.
        if n % 2 == 0:
            transport.append({"from": "initiator", "payload": p.hex(), "ciphertext": i.encrypt(p).hex()})
        else:
            transport.append({"from": "responder", "payload": p.hex(), "ciphertext": r.encrypt(p).hex()})
    return {
        "psk": psk.hex(),
        "prologue": PROLOGUE.hex(),
        "initiator_ephemeral_private": ie.hex(),
        "responder_ephemeral_private": re.hex(),
        "responder_ephemeral_public": responder_pub.hex(),
        "message1": m1.hex(),
        "message2": m2.hex(),
        "handshake_hash": r.get_handshake_hash().hex(),
        "transport": transport,
    }


payloads = [b"\x00\x01\x00\x00", b"\x00\x02\x00\x05hello", b"", bytes(range(200)),
            b"\x00\x07\x00\x00", b"\x00\x08\x00\x00"]
vectors = [vector(n, payloads) for n in range(3)]
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "noise-vectors.json")
with open(out, "w") as f:
    json.dump({"protocol": NAME.decode(), "generator": "noiseprotocol 0.3.1", "vectors": vectors}, f, indent=1)
    f.write("\n")
print(out)
