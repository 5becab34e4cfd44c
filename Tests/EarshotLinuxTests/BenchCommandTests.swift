import EarshotTestSupport
import XCTest

/// `earshot bench` runs every stage and prints its table. Speed is not
/// asserted (no wall-clock limits in tests): only that each figure is there
/// and sane.
final class BenchCommandTests: XCTestCase {
  func testShortRunPrintsEveryStage() throws {
    try PulseServer.require()
    let r = try Earshot.run([
      "bench", "--seconds", "0.2", "--reports", "5000", "--beacons", "2000",
      "--dense-minutes", "2", "--duty-hours", "1", "--alert-device", "default", "--mixer-card",
      "default",
    ])
    XCTAssertEqual(r.status, 0, r.stderr)
    let lines = r.stdout.split(separator: "\n").map(String.init)
    func value(_ prefix: String) -> Double? {
      guard let line = lines.first(where: { $0.hasPrefix(prefix) }) else { return nil }
      let fields = line.dropFirst(prefix.count).split(separator: " ")
      return fields.first.flatMap { Double($0) }
    }
    for stage in [
      "HCI event decode + iBeacon", "capture read + decode + iBeacon", "decode + range + monitor",
    ] {
      let rate = try XCTUnwrap(value(stage), "\(stage) missing from:\n\(r.stdout)")
      XCTAssertGreaterThan(rate, 0, stage)
    }
    XCTAssertTrue(r.stdout.contains("(monitor: 3 regions,"), r.stdout)
    let live = try XCTUnwrap(
      lines.first { $0.hasPrefix("live: CPU at ") }, "live row missing:\n\(r.stdout)")
    XCTAssertTrue(live.contains(" %"), live)
    let wakeups = try XCTUnwrap(value("live: loop wakeups per second"), r.stdout)
    // No busy polling: the loop wakes at most about once per report (1000/s).
    XCTAssertGreaterThan(wakeups, 0)
    XCTAssertLessThan(wakeups, 1_500, r.stdout)
    let rss = try XCTUnwrap(value("memory: 2000 beacons, VmRSS"), r.stdout)
    XCTAssertGreaterThan(rss, 1, r.stdout)
    // The dense room: a figure for its first and last minute of capture time.
    let dense = try XCTUnwrap(
      lines.first { $0.hasPrefix("dense room: ns/report, min 1/2 ") }, r.stdout)
    XCTAssertTrue(dense.contains("600000 reports, "), dense)
    XCTAssertTrue(dense.contains(" addresses, 5,000/s"), dense)
    XCTAssertTrue(
      lines.contains { $0.hasPrefix("dense room: VmRSS MB, min 1/2 ") }, r.stdout)
    // The scan scheduler's hour: a duty on each power source, below full,
    // and no goal claimed for an hour (the goals are a day's).
    let duty = try XCTUnwrap(
      lines.first { $0.hasPrefix("scan duty: house 1 h, battery / mains") }, r.stdout)
    let duties = duty.dropFirst("scan duty: house 1 h, battery / mains".count)
      .split(separator: " ").compactMap { Double($0) }.prefix(2)
    XCTAssertEqual(duties.count, 2, duty)
    XCTAssertTrue(duties.allSatisfy { $0 > 1 && $0 < 50 }, duty)
    XCTAssertTrue(duty.hasSuffix("none under 24 h (the first hour settles at full duty)"), duty)
    let falseExits = try XCTUnwrap(
      lines.first { $0.hasPrefix("scan duty: false exits, battery / mains") }, r.stdout)
    XCTAssertTrue(falseExits.contains(" 0 / 0 "), falseExits)
    let start = try XCTUnwrap(value("find-phone: request -> first sample"), r.stdout)
    let silent = try XCTUnwrap(value("find-phone: found -> PCM silent"), r.stdout)
    XCTAssertGreaterThan(start, 0)
    XCTAssertGreaterThan(silent, 0)
    XCTAssertTrue(r.stdout.contains("of 3, default)"), r.stdout)
  }

  /// Request -> audible: the ring is heard on the null sink's monitor (the
  /// server's default source) on each server, 3 cycles, a figure per row.
  func testRequestToAudibleOnBothServers() throws {
    for server in [SoundServer.pulse, .pipewire] {
      try server.require()
      try server.resetSink()
      let r = try Earshot.run(
        [
          "bench", "--seconds", "0.2", "--reports", "2000", "--beacons", "100",
          "--dense-minutes", "0", "--duty-hours", "1", "--alert-device", server.card,
          "--mixer-card", server.card,
          "--monitor", server.card,
        ], environment: server.environment)
      XCTAssertEqual(r.status, 0, r.stderr)
      let lines = r.stdout.split(separator: "\n").map(String.init)
      let audible = try XCTUnwrap(
        lines.first { $0.hasPrefix("find-phone: request -> audible ") }, "\(server):\n\(r.stdout)")
      XCTAssertTrue(audible.contains("of 3; heard on \(server.card), zeros playing)"), audible)
      let median = audible.dropFirst("find-phone: request -> audible".count)
        .split(separator: " ").first.flatMap { Double($0) }
      XCTAssertGreaterThan(try XCTUnwrap(median, audible), 0, "heard after the request")
      XCTAssertTrue(
        lines.contains { $0.hasPrefix("find-phone: request -> sound read back ") }, r.stdout)
      server.resetSinkQuietly()
    }
  }

  func testWithoutAnAlertDeviceFindPhoneIsSkippedAndSaysHow() throws {
    let r = try Earshot.run([
      "bench", "--seconds", "0.05", "--reports", "2000", "--beacons", "100", "--dense-minutes", "0",
      "--duty-hours", "1",
    ])
    XCTAssertEqual(r.status, 0, r.stderr)
    XCTAssertTrue(r.stdout.contains("find-phone                              skipped"), r.stdout)
    XCTAssertTrue(r.stdout.contains("--alert-device PCM to measure"), r.stdout)
    // The identity stage: its rate, its live CPU, and both as ratios to the iBeacon figures.
    let lines = r.stdout.split(separator: "\n").map(String.init)
    let identity = try XCTUnwrap(
      lines.first { $0.hasPrefix("identity: decode + resolve + monitor ") }, r.stdout)
    let rate = try XCTUnwrap(
      identity.split(separator: " ").dropFirst(6).first.flatMap { Double($0) })
    XCTAssertGreaterThan(rate, 0, identity)
    XCTAssertTrue(r.stdout.contains("(identity: 13 regions, 50 keys, 200 advertisers"), r.stdout)
    let cpu = try XCTUnwrap(lines.first { $0.hasPrefix("identity: CPU at ") }, r.stdout)
    XCTAssertTrue(cpu.contains("ratio to iBeacon "), cpu)
    XCTAssertTrue(
      lines.contains { $0.hasPrefix("identity: reports/s ratio to iBeacon ") }, r.stdout)
    // The Bluetooth proxy: advertisements forwarded to 1 and to 10 clients.
    for proxy in ["esphome proxy: 1 client ", "esphome proxy: 10 clients "] {
      let row = try XCTUnwrap(lines.first { $0.hasPrefix(proxy) }, r.stdout)
      let forwarded = try XCTUnwrap(
        row.dropFirst(proxy.count).split(separator: " ").first.flatMap { Double($0) }, row)
      XCTAssertGreaterThan(forwarded, 0, row)
    }
    // The reference: the same advertisers as iBeacons, all in a region.
    let matched = try XCTUnwrap(
      lines.first { $0.hasPrefix("iBeacons all in a region (reference) ") }, r.stdout)
    let matchedRate = try XCTUnwrap(
      matched.split(separator: " ").dropFirst(6).first.flatMap { Double($0) })
    XCTAssertGreaterThan(matchedRate, 0, matched)
    XCTAssertTrue(
      lines.contains { $0.hasPrefix("identity: ratio to matched iBeacons ") }, r.stdout)
  }

  /// --find-phone-only: the find-phone rows and nothing else, the first
  /// cycle apart from the counted ones.
  func testFindPhoneOnlyPrintsFindPhoneAlone() throws {
    try PulseServer.require()
    let r = try Earshot.run([
      "bench", "--find-phone-only", "--seconds", "0.2", "--alert-device", "default",
    ])
    XCTAssertEqual(r.status, 0, r.stderr)
    let lines = r.stdout.split(separator: "\n").map(String.init)
    XCTAssertEqual(
      lines.first?.split(separator: " ").map(String.init), ["measure", "value", "goal"], r.stdout)
    XCTAssertEqual(
      lines.dropFirst().map { $0.split(separator: " ").prefix(4).joined(separator: " ") },
      [
        "find-phone: request -> first", "find-phone: found -> PCM",
        "find-phone: first request (not",
      ], r.stdout)
    XCTAssertTrue(lines[1].contains("of 3, default)"), lines[1])
    XCTAssertTrue(lines[3].hasSuffix(" to first sample (the path's first run)"), lines[3])
    let cold = lines[3].dropFirst("find-phone: first request (not counted)".count)
      .split(separator: " ").first.flatMap { Double($0) }
    XCTAssertGreaterThan(try XCTUnwrap(cold, lines[3]), 0)
  }

  func testBadOptionsSayWhatIsWrong() throws {
    let r = try Earshot.run(["bench", "--rate", "0"])
    XCTAssertEqual(r.status, 2)
    XCTAssertTrue(r.stderr.contains("--rate must be 1…100000 reports/s"), r.stderr)
    let alone = try Earshot.run(["bench", "--find-phone-only"])
    XCTAssertEqual(alone.status, 2)
    XCTAssertTrue(alone.stderr.contains("--find-phone-only needs --alert-device"), alone.stderr)
  }
}
