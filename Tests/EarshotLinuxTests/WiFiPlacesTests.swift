import EarshotCore
import XCTest

@testable import EarshotLinux

/// The laptop's sources of places and moves on the agent's loop: mains
/// unplugged read from a sysfs tree (made up here: no machine that runs
/// the tests has a charger to pull; the kernel test bed's guest has no
/// test_power), and nl80211 opened or refused with a clear reason (the
/// access points and network changes are tested on real radios in
/// Tests/vm/tests/tracker_follow.sh).
final class WiFiPlacesTests: XCTestCase {
  func supplies(online: String) throws -> String {
    let root = try makeTempDirectory()
    for (name, type) in [("AC", "Mains"), ("BAT0", "Battery")] {
      try FileManager.default.createDirectory(
        atPath: root + "/" + name, withIntermediateDirectories: true)
      try "\(type)\n".write(toFile: root + "/\(name)/type", atomically: true, encoding: .utf8)
    }
    try "\(online)\n".write(toFile: root + "/AC/online", atomically: true, encoding: .utf8)
    return root
  }

  /// Runs the loop for `seconds`, whatever happens.
  func idle(_ loop: EventLoop, _ seconds: Double) throws {
    _ = loop.after(seconds: seconds) { loop.stop() }
    try loop.run()
  }

  func testUnpluggingIsAMoveOnTheWatch() throws {
    let root = try supplies(online: "1")
    defer { try? FileManager.default.removeItem(atPath: root) }
    let loop = try EventLoop()
    var lines: [String] = []
    let driver = TrackerWatchDriver(
      config: TrackersConfig(), now: { MonotonicTime(nanos: Clock.boottimeNanos()) },
      log: { lines.append($0) })
    driver.attachLaptop(loop: loop, wifi: false, powerRoot: root, mainsInterval: 0.05)
    // A place from the Wi-Fi (as the scan results would give it).
    XCTAssertTrue(driver.handle(.accessPoints(["02:00:00:00:00:00", "02:00:00:00:00:01", "x"])))
    XCTAssertEqual(driver.watch.place.current, PlaceID(1))
    try idle(loop, 1)  // nothing while plugged in
    XCTAssertEqual(lines, [])

    try "0\n".write(toFile: root + "/AC/online", atomically: true, encoding: .utf8)
    spin(loop, "unplugged") { lines.contains("trackers: the laptop moved (unplugged)") }
    XCTAssertNil(driver.watch.place.current, "the place is unknown after the move")
    try "1\n".write(toFile: root + "/AC/online", atomically: true, encoding: .utf8)
    try idle(loop, 1)  // plugged in again: no move
    XCTAssertEqual(lines.filter { $0.contains("moved") }.count, 1)
  }

  func testMainsWatchReadsSysfsAgainAfterItsInterval() throws {
    let root = try supplies(online: "1")
    defer { try? FileManager.default.removeItem(atPath: root) }
    let loop = try EventLoop()
    let mains = MainsWatch(loop: loop, root: root, interval: 0.05)
    var unplugged = 0
    mains.onUnplugged = { unplugged += 1 }
    try "0\n".write(toFile: root + "/AC/online", atomically: true, encoding: .utf8)
    spin(loop, "unplugged") { unplugged == 1 }
    // A tree that cannot be read (the supply gone) is no move.
    try FileManager.default.removeItem(atPath: root + "/AC")
    try idle(loop, 0.5)
    XCTAssertEqual(unplugged, 1)
  }

  /// nl80211 opens where the kernel has it; elsewhere the error says why,
  /// and the agent goes on (one log line) with places from advertisers.
  func testNL80211OpensOrSaysWhy() throws {
    let loop = try EventLoop()
    let hasWiFi = FileManager.default.fileExists(atPath: "/sys/module/cfg80211")
    do {
      let w = try WiFiPlaces(loop: loop, now: { .zero })
      XCTAssertTrue(hasWiFi, "nl80211 opened without cfg80211 loaded")
      XCTAssertEqual(w.scans, 0)
    } catch {
      XCTAssertFalse(hasWiFi, "cfg80211 is loaded, yet: \(error)")
      XCTAssertEqual("\(error)", "no nl80211 in this kernel (no Wi-Fi)")
    }
    var lines: [String] = []
    let driver = TrackerWatchDriver(
      config: TrackersConfig(), now: { .zero }, log: { lines.append($0) })
    driver.attachLaptop(loop: loop, wifi: true, powerRoot: "/nonexistent")
    XCTAssertEqual(driver.wifi == nil, !hasWiFi)
    if !hasWiFi {
      XCTAssertEqual(
        lines,
        [
          "trackers: no Wi-Fi places (no nl80211 in this kernel (no Wi-Fi)); places come from the advertisers heard"
        ])
    }
  }
}
