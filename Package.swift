// swift-tools-version:6.0
// Earshot: a Linux agent that lets a laptop act as "the phone" for Bluetooth
// accessories and watch which beacons are near.
import PackageDescription

let package = Package(
  name: "Earshot",
  products: [
    .executable(name: "earshot", targets: ["earshot"])
  ],
  targets: [
    // Linux kernel interfaces (epoll, timerfd, signalfd) that Glibc lacks.
    .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
    // C libraries from Debian, found with pkg-config. Each folder holds a
    // module map and a one-line shim header.
    .systemLibrary(
      name: "CBlueZ", path: "Sources/CBlueZ", pkgConfig: "bluez",
      providers: [.apt(["libbluetooth-dev"])]),
    .systemLibrary(
      name: "CINIH", path: "Sources/CINIH", pkgConfig: "inih",
      providers: [.apt(["libinih-dev"])]),
    .systemLibrary(
      name: "CALSA", path: "Sources/CALSA", pkgConfig: "alsa",
      providers: [.apt(["libasound2-dev"])]),
    .systemLibrary(
      name: "CSndFile", path: "Sources/CSndFile", pkgConfig: "sndfile",
      providers: [.apt(["libsndfile1-dev"])]),
    .systemLibrary(
      name: "CSQLite3", path: "Sources/CSQLite3", pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"])]),

    // sd-bus, for BlueZ's D-Bus API (the BLE device link).
    .systemLibrary(
      name: "CSystemd", path: "Sources/CSystemd", pkgConfig: "libsystemd",
      providers: [.apt(["libsystemd-dev"])]),

    .systemLibrary(
      name: "CMosquitto", path: "Sources/CMosquitto", pkgConfig: "libmosquitto",
      providers: [.apt(["libmosquitto-dev"])]),

    // libnl's generic netlink: nl80211 scan results and connection events
    // (Trackers/WiFiPlaces.swift).
    .systemLibrary(
      name: "CNL80211", path: "Sources/CNL80211", pkgConfig: "libnl-genl-3.0",
      providers: [.apt(["libnl-genl-3-dev"])]),

    // Video4Linux2 from the kernel headers (no library to link).
    .systemLibrary(name: "CV4L2", path: "Sources/CV4L2"),
    // libjpeg-turbo: encodes camera frames as JPEG (see Shutter/JPEGEncoder.swift).
    .systemLibrary(
      name: "CJPEG", path: "Sources/CJPEG", pkgConfig: "libjpeg",
      providers: [.apt(["libjpeg62-turbo-dev"])]),
    // OpenSSL's libcrypto: AES-128 for resolving private addresses (Identity/).
    .systemLibrary(
      name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
      providers: [.apt(["libssl-dev"])]),

    // Pure Swift: bytes in, values and decisions out. No files, sockets or clocks.
    .target(name: "EarshotCore"),

    // The thin Linux shell: sockets, ALSA, files, processes.
    .target(
      name: "EarshotLinux",
      dependencies: [
        "EarshotCore", "CLinux", "CBlueZ", "CINIH", "CALSA", "CSndFile", "CMosquitto", "CSQLite3",
        "CV4L2", "CJPEG", "CSystemd", "CCrypto", "CNL80211",
      ]),

    // The command-line front door. Linked by lld with packed relative
    // relocations (DT_RELR, glibc 2.36+) and Earshot's own symbols kept out
    // of the dynamic symbol table (the static Swift runtime's link line
    // exports every symbol): the loader reads 6 KB of relocations instead
    // of 700 KB and a 13 KB symbol table instead of 1 MB at every start,
    // about 2 MB of resident pages (docs/performance.md).
    .executableTarget(
      name: "earshot", dependencies: ["EarshotCore", "EarshotLinux"], exclude: ["exports.map"],
      linkerSettings: [
        .unsafeFlags([
          "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker",
          "--version-script=\(Context.packageDirectory)/Sources/earshot/exports.map",
        ])
      ]),

    // Helpers both test targets use (shared data, resources, the built binary).
    .target(
      name: "EarshotTestSupport", dependencies: ["EarshotCore"], path: "Tests/EarshotTestSupport"),
    .testTarget(name: "EarshotCoreTests", dependencies: ["EarshotCore", "EarshotTestSupport"]),
    .testTarget(
      name: "EarshotLinuxTests",
      dependencies: ["EarshotCore", "EarshotLinux", "EarshotTestSupport"]),
  ]
)
