# Earshot: the commands the README gives.
SWIFT ?= swift
PREFIX ?= /usr/local
# The shipped binary: the Swift runtime linked in (about 2 MB less resident
# memory than the shared libraries, and nothing to install beside it).
RELEASE_BUILD = build -c release --product earshot --static-swift-stdlib

.PHONY: build demo check test install format deb

build:
	scripts/deps.sh build
	$(SWIFT) $(RELEASE_BUILD)

# No Bluetooth hardware needed: replays the bundled capture through the
# scanner, then a generated morning at a desk through the region monitor.
demo: build
	.build/release/earshot scan --input captures/demo.btsnoop --format text | head -12
	.build/release/earshot simulate scenario --spec scenarios/office.scenario --write /tmp/earshot-office.btsnoop
	.build/release/earshot monitor --config scenarios/office.conf --input /tmp/earshot-office.btsnoop --no-range

# Day-to-day: the debug build and every test but the slow ones (a few
# minutes on a 2-core machine; scripts/check.sh says which are left out).
check:
	scripts/deps.sh build
	scripts/check.sh

# Everything CI runs: unit and integration tests, then the kernel test bed.
test:
	scripts/deps.sh test
	scripts/test.sh

format:
	swift-format format --in-place --recursive Sources Tests Package.swift

# Binary, config, sounds and systemd units (PREFIX=/usr/local, DESTDIR for packaging).
install: build
	scripts/install.sh $(PREFIX)

# The Debian package: .build/deb/earshot_VERSION_amd64.deb (debhelper; VERSION
# is what `earshot --version` prints), built in its own .build/deb-build and
# failing on a lintian error. Needs no root and no network.
deb:
	scripts/deps.sh deb
	# clean first: debhelper's build stamp from an earlier run would skip
	# the build and package whatever binary is there now.
	SWIFT=$(SWIFT) debian/rules clean
	SWIFT=$(SWIFT) debian/rules binary
	lintian --fail-on error .build/deb/earshot_*_amd64.deb
