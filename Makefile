# Earshot: the commands the README gives.
SWIFT ?= swift
PREFIX ?= /usr/local

.PHONY: build demo test install format

build:
	scripts/deps.sh build
	$(SWIFT) build -c release

# Replays the bundled capture through the scanner: no Bluetooth hardware needed.
demo: build
	.build/release/earshot scan --input captures/demo.btsnoop --format text

# Everything CI runs: unit and integration tests, then the kernel test bed.
test:
	scripts/deps.sh test
	scripts/test.sh

format:
	swift-format format --in-place --recursive Sources Tests Package.swift

# Binary, config, sounds and systemd units (PREFIX=/usr/local, DESTDIR for packaging).
install: build
	scripts/install.sh $(PREFIX)
