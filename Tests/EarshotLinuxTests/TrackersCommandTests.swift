import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// `earshot trackers --capture` on the shared captures: the trackers each
/// one holds with a handle (docs/trackers.md's conformance table), the
/// frames without one counted, and nothing following in a few minutes at
/// one place.
final class TrackersCommandTests: XCTestCase {
  func testSharedCapturesListTheirTrackersAndNoneFollows() throws {
    // capture: (reports, trackers kept, frames without a handle)
    let expected: [String: (Int, Int, Int)] = [
      "ashmartian_happyleaf.btsnoop": (9, 1, 0),
      "blakete_boston-mesh.hackrf-20ch.le-ll-phdr.pcap": (1_939, 2, 22),
      "blakete_boston-mesh.take3-adv38.le-ll-phdr.pcap": (5_783, 0, 149),
      "csacca_horizon-74-at-ble.btsnoop": (412, 2, 0),
      "dandwhelan_fossibot-bluetooth.btsnoop": (7_426, 1, 282),
      "nick0451_dsp408-tuner.btsnoop": (154, 1, 9),
      "whoisbe_pongbot-mcp.btsnoop": (460, 0, 2),
    ]
    for (name, (reports, kept, unnamed)) in expected {
      let path = try SharedData.url("ble/captures/" + name).path
      for level in ["high", "medium"] {
        let r = try runEarshot(["trackers", "--capture", path, "--sensitivity", level])
        XCTAssertEqual(r.status, 0, "\(name): \(r.err)")
        let lines = r.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(
          lines.first,
          "\(reports) reports; \(kept) tracker(s) kept, \(unnamed) frame(s) of trackers without a handle; sensitivity \(level)",
          name)
        XCTAssertEqual(lines.count, kept + 2, "\(name): \(r.out)")
        XCTAssertEqual(lines.last, "following: 0", name)
        XCTAssertFalse(r.out.contains("FOLLOWING"), name)
      }
    }
    // nick0451's one separated AirTag, as the decoder reads it.
    let nick = try runEarshot([
      "trackers", "--capture",
      try SharedData.url("ble/captures/nick0451_dsp408-tuner.btsnoop").path,
    ])
    XCTAssertTrue(
      nick.out.contains(
        "1: Find My (separated): airtag separated battery medium address CF:23:79:7A:AE:9B, first 23:30:57, last 23:30:57, 1 sighting(s), -88 dBm, 0 place(s)"
      ), nick.out)
  }

  func testAnEnrolledAddressIsShownTrustedAndABadLevelIsRefused() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let conf = dir + "/earshot.conf"
    try "[trackers]\ntrusted = CF:23:79:7A:AE:9B\n".write(
      toFile: conf, atomically: true, encoding: .utf8)
    let path = try SharedData.url("ble/captures/nick0451_dsp408-tuner.btsnoop").path
    let r = try runEarshot(["trackers", "--capture", path, "--config", conf])
    XCTAssertEqual(r.status, 0, r.err)
    XCTAssertTrue(r.out.contains("0 place(s), trusted\n"), r.out)
    let bad = try runEarshot(["trackers", "--capture", path, "--sensitivity", "extreme"])
    XCTAssertNotEqual(bad.status, 0)
    XCTAssertTrue(bad.err.contains("--sensitivity expects high, medium or low"), bad.err)
  }

  /// `earshot run --input` with [trackers] enabled: the capture's reports
  /// reach the watch through the agent's monitor, and `status` lists them.
  func testTheAgentWatchesAReplayedCapture() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var config = Config()
    config.trackers.enabled = true
    let path = try SharedData.url("ble/captures/blakete_boston-mesh.hackrf-20ch.le-ll-phdr.pcap")
      .path
    let agent = try Agent(
      config: config.inTest(dir),
      surroundings: .test(directory: dir, reports: CaptureReports(path: path)))
    try agent.start()
    let rows = try XCTUnwrap(agent.trackers).watch.rows
    XCTAssertEqual(rows.map(\.frame.kind), [.findMyAccessory, .appleDevice])
    XCTAssertEqual(rows.map(\.sightings), [5, 3])
    guard case .array(let shown) = agent.daemon.statusJSON()["trackers"] ?? .null else {
      return XCTFail("no trackers section in status")
    }
    XCTAssertEqual(shown.count, 2)
    XCTAssertEqual(shown.first?["protocol"], .string("Find My (separated)"))
    XCTAssertEqual(shown.first?["following"], .bool(false))
  }

  func testAFollowingTagThroughTheCommandAndTheAgent() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let capture = dir + "/following.btsnoop"
    try writeFollowingCapture(capture)
    let r = try runEarshot(["trackers", "--capture", capture, "--sensitivity", "high"])
    XCTAssertEqual(r.status, 0, r.err)
    XCTAssertTrue(r.out.hasPrefix("540 reports; 1 tracker(s) kept"), r.out)
    // The second place is recognised two epochs (10 min) after the move at 30.
    XCTAssertTrue(
      r.out.contains("90 sighting(s), -60 dBm, 3 place(s), FOLLOWING since 00:40:00"), r.out)
    XCTAssertTrue(r.out.hasSuffix("following: 1\n"), r.out)
    // Medium wants an hour across three places: the third from minute 70.
    let medium = try runEarshot(["trackers", "--capture", capture])
    XCTAssertTrue(medium.out.contains("FOLLOWING since 01:10:00"), medium.out)

    // The agent (earshot run --input) with [trackers]: its event, once.
    var config = Config()
    config.trackers.enabled = true
    config.trackers.sensitivity = .high
    var logged: [String] = []
    let agent = try Agent(
      config: config.inTest(dir),
      surroundings: .test(
        directory: dir, reports: CaptureReports(path: capture), log: { logged.append($0) }))
    let events = EventRecorder()
    agent.daemon.add(events)
    try agent.start()
    XCTAssertEqual(events.lines.count, 1, "\(events.lines)")
    let line = try XCTUnwrap(events.lines.first)
    XCTAssertTrue(
      line.hasPrefix(
        #"{"event":"tracker_following","tracker":{"number":1,"protocol":"Find My (separated)","kind":"airtag","state":"separated","address":"C3:11:22:33:44:55","sightings":41,"places":2,"following":true"#
      ), line)
    XCTAssertTrue(logged.contains { $0.hasPrefix("tracker following: tracker 1 ") }, "\(logged)")
  }
}

extension TrackersCommandTests {
  /// `earshot run --input` as a process, and `earshot trackers` asking it
  /// over the control socket.
  func testTheLiveListFromARunningAgent() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let capture = dir + "/following.btsnoop"
    try writeFollowingCapture(capture)
    let db = dir + "/log.sqlite"
    let agent = try AgentProcess(
      config:
        "[trackers]\nenabled = true\nsensitivity = high\n[log]\nenabled = true\npath = \(db)\n",
      arguments: ["--input", capture])
    XCTAssertTrue(agent.waitForLog("tracker following: tracker 1 "), agent.log)
    let r = try runEarshot(["trackers", "--socket", agent.socket])
    XCTAssertEqual(r.status, 0, r.err)
    let lines = r.out.split(separator: "\n").map(String.init)
    XCTAssertEqual(lines.count, 2, r.out)
    XCTAssertTrue(
      lines[0].hasPrefix(
        "1: Find My (separated): airtag separated at C3:11:22:33:44:55, first 5340 s ago, last 0 s ago, 90 sighting(s), -60 dBm, 3 place(s), FOLLOWING"
      ), r.out)
    XCTAssertEqual(lines.last, "following: 1")
    // Trusted for an hour, then cleared; an unknown number is refused.
    let trusted = try runEarshot([
      "trackers", "--socket", agent.socket, "--trust", "1", "--for", "3600",
    ])
    XCTAssertEqual(trusted.status, 0, trusted.err)
    XCTAssertTrue(trusted.out.contains("3 place(s), trusted, FOLLOWING\n"), trusted.out)
    let cleared = try runEarshot(["trackers", "--socket", agent.socket, "--clear", "1"])
    XCTAssertEqual(cleared.out, "following: 0\n", cleared.err)
    let unknown = try runEarshot(["trackers", "--socket", agent.socket, "--clear", "1"])
    XCTAssertNotEqual(unknown.status, 0)
    XCTAssertTrue(unknown.err.contains("no tracker 1 is kept"), unknown.err)
    XCTAssertEqual(agent.stop(), 0, agent.log)
    // The proximity log: when it started to follow (capture time), and the clear.
    let log = try runEarshot(["log", "--db", db, "--format", "json"])
    XCTAssertEqual(log.status, 0, log.err)
    let rows = log.out.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
      .filter { $0["type"]?.string == "tracker" }
    XCTAssertEqual(rows.map { $0["event"]?.string }, ["following", "cleared"], log.out)
    XCTAssertEqual(rows.first?["t"]?.number, 1_767_225_600 + 2400.5)
    XCTAssertEqual(rows.map { $0["count"]?.number }, [41, 90])
    XCTAssertEqual(rows.first?["address"]?.string, "C3:11:22:33:44:55")

    // An agent without [trackers] says so.
    let plain = try AgentProcess()
    let none = try runEarshot(["trackers", "--socket", plain.socket])
    XCTAssertNotEqual(none.status, 0)
    XCTAssertTrue(none.err.contains("set [trackers] enabled = true"), none.err)
    _ = plain.stop()
  }
}

extension TrackersCommandTests {
  /// The simulated fortnight (docs/trackers.md) written as a capture and
  /// replayed through the agent at the default sensitivity, as a laptop
  /// without Wi-Fi scans or resume events would hear it: each follower
  /// alerts on each working day it follows, at the office (its third place)
  /// within 15 minutes of arriving (the Tile, which says no state, once, on
  /// the evening train: its fourth place), and nothing else alerts. The owner's
  /// SmartTag is left out: it is trusted by a sighting, which a capture
  /// cannot carry.
  func testTheFortnightThroughTheAgent() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let fortnight = TrackerFortnight(seed: 40, wifi: false)
    let start: Int64 = 1_767_225_600_000_000
    var roles: [BDAddress: TrackerFortnight.Role] = [:]
    var bytes = BtsnoopWriter.header
    var reports = 0
    fortnight.run { step in
      guard !step.data.isEmpty, step.role != .ownSmartTag else { return }
      let address: BDAddress
      switch step.event {
      case .tracker(_, let a, _): address = a
      case .advertiser(let a, _): address = a
      default: return
      }
      if let role = step.role { roles[address] = role }
      let event = step.data.withUnsafeBytes { d in
        HCIEventEncoder.legacyReport(
          AdvertisingReport(
            pdu: .advNonconnInd, address: address, addressType: .random, rssi: -70, data: d))!
      }
      let micros = start + Int64(step.time.nanos / 1000)
      bytes += event.withUnsafeBytes { BtsnoopWriter.record(event: $0, micros: micros) }
      reports += 1
    }
    let capture = dir + "/fortnight.btsnoop"
    try Data(bytes).write(to: URL(fileURLWithPath: capture))
    bytes = []

    var config = Config()
    config.trackers.enabled = true
    config.trackers.trusted = [fortnight.ownChipolo]
    let agent = try Agent(
      config: config.inTest(dir),
      surroundings: .test(directory: dir, reports: CaptureReports(path: capture)))
    let events = EventRecorder()
    agent.daemon.add(events)
    try agent.start()
    var alerts: [TrackerFortnight.Role: [Int]] = [:]
    for row in events.rows {
      let role = try XCTUnwrap(roles[row.address], "\(row.address)")
      let since = Int64(row.following!.nanos / 1000) - start
      let day = Int(since / 86_400_000_000)
      let minute = Int(since % 86_400_000_000 / 60_000_000)
      XCTAssertTrue(role.follows, "\(role) alerted on day \(day) at minute \(minute)")
      // The Tile says no state: a fourth place, the evening train.
      let arrival = role == .tile ? 17 * 60 + 40 : 9 * 60
      XCTAssertTrue(
        (arrival...arrival + 15).contains(minute), "\(role) on day \(day): minute \(minute)")
      alerts[role, default: []].append(day)
    }
    XCTAssertEqual(alerts[.airTag], [2, 3, 4, 7, 8, 9, 10, 11])
    XCTAssertEqual(alerts[.findHub], [7, 8, 9, 10, 11])
    XCTAssertEqual(alerts[.smartTag], [4])
    XCTAssertEqual(alerts[.tile], [9])
    // The seeded fortnight's reports, all replayed: the followers are kept to the end.
    XCTAssertEqual(reports, 381_848)
    let kept = try XCTUnwrap(agent.trackers).watch.rows
    XCTAssertEqual(kept.filter { $0.following != nil }.count, 15)
  }
}

/// A transport that keeps the control socket's lines of tracker events.
final class EventRecorder: AgentTransport {
  var lines: [String] = []
  var rows: [TrackerRow] = []
  let name = "recorder"
  var deviceLink: DeviceLink? { nil }
  func start() {}
  func stop() {}
  func agentEvent(_ event: AgentEvent) {
    if case .trackerFollowing(let row) = event {
      rows.append(row)
      lines.append(ControlProtocol.trackerFollowingEvent(row))
    }
  }
}

/// 90 minutes at three places (five fixed advertisers each, heard every
/// minute) with a separated AirTag throughout, as a btsnoop capture.
func writeFollowingCapture(_ path: String) throws {
  let start: Int64 = 1_767_225_600_000_000  // 2026-01-01 00:00 UTC
  let tag = BDAddress("C3:11:22:33:44:55")!
  let tagData = TrackerAirFrame.findMySeparated(kind: 1, key: 42)
  let envData: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0xFF, 0x59, 0x00]
  var bytes = BtsnoopWriter.header
  for minute in 0..<90 {
    let place = UInt64(minute / 30)
    var heard: [(BDAddress, [UInt8])] = (0..<5).map {
      (BDAddress(raw: 0xC100_0000_0000 | place << 8 | UInt64($0)), envData)
    }
    heard.append((tag, tagData))
    for (i, (address, data)) in heard.enumerated() {
      let event = data.withUnsafeBytes { d in
        HCIEventEncoder.legacyReport(
          AdvertisingReport(
            pdu: .advNonconnInd, address: address, addressType: .random, rssi: -60, data: d))!
      }
      let micros = start + Int64(minute) * 60_000_000 + Int64(i) * 100_000
      bytes += event.withUnsafeBytes { BtsnoopWriter.record(event: $0, micros: micros) }
    }
  }
  try Data(bytes).write(to: URL(fileURLWithPath: path))
}

extension TrackersCommandTests {
  /// Live, `status` counts "s ago" from now, not from the last report: no
  /// timer advances the watch in a quiet spell.
  func testTheLiveStatusCountsFromNowAfterAQuietSpell() throws {
    var clock = MonotonicTime.zero + .seconds(100)
    let driver = TrackerWatchDriver(config: TrackersConfig(), now: { clock }, log: { _ in })
    let a = BDAddress("C1:AA:BB:CC:DD:02")!
    let frame = try XCTUnwrap(
      TrackerFrame.decode(
        advertisingData: TrackerAirFrame.findMySeparated(kind: 1, key: a.raw), address: a))
    XCTAssertTrue(driver.handle(.tracker(frame, address: a, rssi: -60)))
    clock = clock + .seconds(600)
    guard case .array(let rows) = driver.statusJSON else { return XCTFail("not an array") }
    XCTAssertEqual(rows.first?["last_seen_s_ago"], .number(600))
    XCTAssertEqual(driver.caughtUp().latest, clock)
  }
}
