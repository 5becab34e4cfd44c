import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore

/// A beacon format of the user's own (`[layout "NAME"]`) as a tracked kind:
/// a region names its beacons with `beacon = NAME:FIELDS`, the simulators
/// send its frames, and the monitor enters and exits on them, as for the
/// built-in formats.
final class LayoutKindTests: XCTestCase {
  /// Six bytes of serial, a two-byte little-endian batch, the power 3 dB
  /// low on the air, a data byte.
  let acme = "m:2-3=ac1e,i:4-9,i:10-11l,p:12-12:-3,d:13-13"

  func config(_ regions: String) throws -> Config {
    try Config.build(
      document(
        """
        [layout "acme"]
        layout = \(acme)
        \(regions)
        """, file: "layouts.conf"))
  }

  func testARegionEntersAndExitsOnAUserLayoutsBeaconsReplayedFromACapture() throws {
    let config = try self.config(
      """
      [region "any-acme"]
      beacon = acme:010203040506
      exit_after = 8
      [region "batch-42"]
      beacon = acme:010203040506:002a
      exit_after = 8
      [region "other-batch"]
      beacon = acme:010203040506:002b
      exit_after = 8
      """)
    let layouts = config.trackedLayouts
    XCTAssertEqual(layouts.rows.count, 1)
    let s = try Scenario.build(
      document(
        """
        [scenario]
        start = 1767225600
        duration = 200
        seed = 5
        [beacon "a"]
        id = acme:010203040506:002a
        interval = 0.5
        loss = 0.2
        present = 10-120
        """, file: "acme.scenario"))
    var monitor = RegionMonitor(config: config, emitRange: true)
    var events = monitor.start(at: DecisionTime(micros: s.micros(0)), scanning: true)
    var replay = CaptureReplay()
    var seen: Set<String> = []
    var lastHeard: Int64 = 0
    try s.capture().bytes.withUnsafeBytes { raw in
      try replay.run(raw) { t, report in
        XCTAssertNil(
          TrackedFrame.decode(advertisingData: report.data).flatMap {
            if case .beacon(let b) = $0 { b } else { nil }
          }, "no built-in format claims the frame")
        guard
          case .beacon(let b)? = TrackedFrame.decode(
            advertisingData: report.data, layouts: layouts)
        else { return }
        seen.insert(b.id.description)
        lastHeard = t
        XCTAssertEqual(b.measuredPower, -59, "the power byte plus the layout's correction")
        events += monitor.report(
          at: DecisionTime(micros: t), beacon: b, address: report.address, rssi: report.rssi)
      }
    }
    events += monitor.advance(to: DecisionTime(micros: s.micros(200)))
    XCTAssertEqual(seen, ["acme:010203040506:002a"])
    func transitions(_ region: String) -> [String] {
      events.filter { $0.region == region && $0.kind != .range }
        .map {
          "\($0.kind.rawValue) \($0.state.rawValue) \(Int((Double($0.decided.micros - s.start) / 1e6).rounded()))"
        }
    }
    XCTAssertEqual(
      transitions("any-acme").prefix(3), ["state unknown 0", "state outside 8", "enter inside 10"])
    let exit = try XCTUnwrap(events.first { $0.region == "any-acme" && $0.kind == .exit })
    XCTAssertEqual(
      Double(exit.decided.micros - lastHeard) / 1e6, 8, accuracy: 0.001,
      "exit_after after the last frame heard (\(Double(lastHeard - s.start) / 1e6) s)")
    XCTAssertEqual(transitions("batch-42"), transitions("any-acme"))
    XCTAssertEqual(transitions("other-batch").suffix(1), ["state outside 8"])
  }

  func testTheKindIsARowLikeTheBuiltInOnes() throws {
    let config = try self.config("")
    let kind = try XCTUnwrap(config.trackedLayouts.rows.first?.kind)
    XCTAssertGreaterThanOrEqual(Int(kind.code), TrackedKind.table.count, "after the built-ins")
    XCTAssertEqual(TrackedKind(name: "ACME"), kind, "any case")
    XCTAssertFalse(kind.hasUUIDShape)
    // Interned: the same layout read again is the same kind.
    XCTAssertEqual(try self.config("").trackedLayouts.rows.first?.kind, kind)

    let id = try XCTUnwrap(TrackedID.parse("acme:010203040506:002a"))
    XCTAssertEqual(id.kind, kind)
    XCTAssertEqual(id.bytes, [1, 2, 3, 4, 5, 6, 0, 0x2A])
    XCTAssertEqual(id.description, "acme:010203040506:002a")
    var j = JSONLine()
    id.addFields(to: &j)
    XCTAssertEqual(j.line, #"{"format":"acme","id1":"010203040506","id2":"002a"}"#)
    XCTAssertEqual(MQTTTopics.slug(id), "acme-010203040506-002a")
    XCTAssertEqual(TrackedID(slug: MQTTTopics.slug(id)), id)
    XCTAssertEqual(kind.row.label(id), "acme 010203040506/002a")
    var rng = SystemRandomNumberGenerator()
    for _ in 0..<200 {
      let random = TrackedID(
        kind: kind, bytes: (0..<8).map { _ in UInt8.random(in: 0...255, using: &rng) })
      XCTAssertEqual(TrackedID.parse(random.description), random, random.description)
      XCTAssertEqual(TrackedID(slug: MQTTTopics.slug(random)), random)
      let leading = try TrackedMatch.parse(
        random.description.split(separator: ":").prefix(2).joined(separator: ":"))
      XCTAssertTrue(leading.matches(random))
      let sent = TrackedBeacon(id: random, measuredPower: Int8.random(in: -90 ... -40))
      let frame = HCIEventEncoder.beaconAdvertisingData(sent)
      XCTAssertEqual(
        frame.withUnsafeBytes { config.trackedLayouts.beacon(in: $0) }, sent, "\(frame)")
    }

    // The frame the simulators send is the layout's: code AC 1E, the batch
    // little-endian, the power 3 dB above the 1 m power, the company 0xFFFF.
    let beacon = TrackedBeacon(id: id, measuredPower: -59)
    let data = HCIEventEncoder.beaconAdvertisingData(beacon)
    XCTAssertEqual(
      data.withUnsafeBytes { $0.hexString }, "020106" + "0fff" + "ffffac1e0102030405062a00c800")
    let frames = data.withUnsafeBytes { config.beaconClassifier.frames(in: $0) }
    guard case .custom(let c)? = frames.first else { return XCTFail("\(frames)") }
    XCTAssertEqual(c.identifiers, [[1, 2, 3, 4, 5, 6], [0, 0x2A]], "scan --all reads the same")
    XCTAssertEqual(
      data.withUnsafeBytes {
        TrackedFrame.decode(advertisingData: $0, layouts: config.trackedLayouts)
      }.flatMap { if case .beacon(let b) = $0 { b } else { nil } }, beacon)
  }

  func testABuiltInFrameIsNeverAUserKinds() throws {
    // A layout that would also read AltBeacons' frames (code BE AC).
    let config = try Config.build(
      document(
        """
        [layout "greedy"]
        layout = m:2-3=beac,i:4-9,p:24-24
        """, file: "greedy.conf"))
    let alt = TrackedBeacon(
      id: TrackedID(
        kind: .altBeacon, uuid: BeaconUUID("2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6")!, major: 1,
        minor: 2),
      measuredPower: -59)
    let data = HCIEventEncoder.beaconAdvertisingData(alt)
    let decoded = data.withUnsafeBytes {
      TrackedFrame.decode(advertisingData: $0, layouts: config.trackedLayouts)
    }
    guard case .beacon(let b)? = decoded else { return XCTFail("\(String(describing: decoded))") }
    XCTAssertEqual(b.id.kind, .altBeacon)
    // An Eddystone-URL is no tracked beacon, and still not a user row's
    // that would read it.
    let urlish = try Config.build(
      document("[layout \"urlish\"]\nlayout = s:0-1=feaa,m:2-2=10,p:3-3,i:4-9\n", file: "u.conf"))
    let url = try XCTUnwrap(bytes(fromHex: "0201060d16aafe10eb03676974687562" + "00"))
    XCTAssertEqual(url.withUnsafeBytes { urlish.beaconClassifier.frames(in: $0) }.count, 1)
    XCTAssertNil(url.withUnsafeBytes { urlish.trackedLayouts.beacon(in: $0) })
  }

  func testRegionErrorsSayWhatToDo() {
    func error(_ text: String) -> String {
      do {
        _ = try Config.build(document(text, file: "x.conf"))
        return "no error"
      } catch { return "\(error)" }
    }
    let variable = """
      [layout "urls"]
      layout = m:2-2=99,p:3-3,i:4-21v
      [region "r"]
      beacon = urls:01
      """
    XCTAssertTrue(
      error(variable).contains(
        "x.conf:4: [region \"r\"] beacon: the layout 'urls' cannot be tracked: a variable-length identifier"
      ), error(variable))
    let long = """
      [layout "long"]
      layout = m:2-3=0102,i:4-25,p:26-26
      [region "r"]
      beacon = long:00
      """
    XCTAssertTrue(error(long).contains("a tracked beacon has at most 20"), error(long))
    let unknown = "[region \"r\"]\nbeacon = nosuch:0102\n"
    XCTAssertTrue(error(unknown).contains("x.conf:2: [region \"r\"] beacon:"), error(unknown))
    let both =
      "[region \"r\"]\nbeacon = \(acmeID)\naltbeacon = 2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6\n"
    XCTAssertTrue(
      error("[layout \"acme\"]\nlayout = \(acme)\n" + both).contains(
        "a region names one beacon format"))
    let short = "[layout \"acme\"]\nlayout = \(acme)\n[region \"r\"]\nbeacon = acme:0102\n"
    XCTAssertTrue(
      error(short).contains("6 bytes") || error(short).contains("12 hex digits"), error(short))
    // The layout may come after the region that names it.
    let later = "[region \"r\"]\nbeacon = \(acmeID)\n[layout \"acme\"]\nlayout = \(acme)\n"
    XCTAssertEqual(error(later), "no error")
  }

  /// Rooms' `track` names a layout's beacons when its section comes first.
  func testRoomsTrackNamesALayoutDefinedBeforeIt() throws {
    let config = try Config.build(
      document(
        """
        [layout "acme"]
        layout = \(acme)
        [rooms]
        track = acme:010203040506
        """, file: "rooms.conf"))
    XCTAssertEqual(config.rooms.track.map(\.description), ["acme:010203040506"])
    let id = try XCTUnwrap(TrackedID.parse(acmeID))
    XCTAssertTrue(config.rooms.track[0].matches(id))
  }

  /// A name resolves to the layout of that name read last, as a reload
  /// brings it back; names differing in case, or all hex, are refused.
  func testANameIsTheLayoutReadLast() throws {
    let first = try config("")
    let firstKind = try XCTUnwrap(first.trackedLayouts.rows.first?.kind)
    let other = try Config.build(
      document("[layout \"acme\"]\nlayout = m:2-3=ac1f,i:4-7,p:8-8\n", file: "other.conf"))
    let otherKind = try XCTUnwrap(other.trackedLayouts.rows.first?.kind)
    XCTAssertNotEqual(firstKind, otherKind)
    XCTAssertEqual(TrackedKind(name: "acme"), otherKind)
    // Read again (a reload back to the first layout): the name is its again.
    XCTAssertEqual(try config("").trackedLayouts.rows.first?.kind, firstKind)
    XCTAssertEqual(TrackedKind(name: "acme"), firstKind)
    XCTAssertEqual(TrackedID.parse(acmeID)?.kind, firstKind)
    XCTAssertEqual(TrackedID(slug: "acme-010203040506-002a")?.kind, firstKind)

    func error(_ text: String) -> String {
      do {
        _ = try Config.build(document(text, file: "x.conf"))
        return "no error"
      } catch { return "\(error)" }
    }
    let cased = "[layout \"acme\"]\nlayout = \(acme)\n[layout \"ACME\"]\nlayout = \(acme)\n"
    XCTAssertTrue(error(cased).contains("x.conf:3: [layout \"ACME\"]"), error(cased))
    XCTAssertTrue(error(cased).contains("only in case"), error(cased))
    let hex = "[layout \"e2c56db5\"]\nlayout = \(acme)\n[region \"r\"]\nbeacon = e2c56db5:00\n"
    XCTAssertTrue(error(hex).contains("all hex digits"), error(hex))
  }

  let acmeID = "acme:010203040506:002a"
}
