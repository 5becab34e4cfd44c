import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore

/// AltBeacon and Eddystone-UID regions from config to events: a scenario
/// made into a capture (the frames as such beacons send them), replayed and
/// decoded as the agent decodes reports (`TrackedBeacon.decode`), into a
/// monitor whose regions were read from config text.
final class BeaconFormatRegionTests: XCTestCase {

  let altUUID = "2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6"
  let namespace = "8f2c1a3e5b7d4e90a1c2"

  func config(_ extra: String = "") throws -> Config {
    try Config.build(
      document(
        """
        [region "alt"]
        altbeacon = \(altUUID):1:2
        exit_after = 8
        [region "eddy"]
        eddystone = \(namespace)
        exit_after = 8
        [region "eddy-b"]
        eddystone = \(namespace):0000000000b2
        exit_after = 8
        [region "same-uuid-ibeacon"]
        uuid = \(altUUID)
        exit_after = 8
        \(extra)
        """, file: "formats.conf"))
  }

  func scenario() throws -> Scenario {
    try Scenario.build(
      document(
        """
        [scenario]
        start = 1767225600
        duration = 300
        seed = 3
        [beacon "alt"]
        altbeacon = \(altUUID):1:2
        interval = 0.5
        loss = 0.2
        present = 10-120
        [beacon "eddy-a"]
        eddystone = \(namespace):0000000000a1
        interval = 1
        loss = 0.2
        present = 0-200
        """, file: "formats.scenario"))
  }

  func testRegionsOfEachFormatEnterAndExitFromACapture() throws {
    let s = try scenario()
    let config = try config()
    var monitor = RegionMonitor(config: config, emitRange: true)
    var events = monitor.start(at: DecisionTime(micros: s.micros(0)), scanning: true)
    var replay = CaptureReplay()
    var formats: Set<String> = []
    let bytes = s.capture().bytes
    try bytes.withUnsafeBytes { raw in
      try replay.run(raw) { t, report in
        guard let b = TrackedBeacon.decode(advertisingData: report.data) else { return }
        formats.insert(b.id.kind.name)
        events += monitor.report(
          at: DecisionTime(micros: t), beacon: b, address: report.address, rssi: report.rssi)
      }
    }
    events += monitor.advance(to: DecisionTime(micros: s.micros(300)))
    XCTAssertEqual(formats, ["altbeacon", "eddystone"])
    func transitions(_ region: String) -> [String] {
      events.filter { $0.region == region && $0.kind != .range }
        .map {
          "\($0.kind.rawValue) \($0.state.rawValue) \(Int((Double($0.decided.micros - s.start) / 1e6).rounded()))"
        }
    }
    XCTAssertEqual(
      transitions("alt"),
      ["state unknown 0", "state outside 8", "enter inside 10", "exit outside 128"],
      "exit_after 8 after the AltBeacon's last advertisement near 120 s")
    XCTAssertEqual(
      transitions("eddy"), ["state unknown 0", "state inside 0", "exit outside 207"],
      "any instance of the namespace counts")
    XCTAssertEqual(transitions("eddy-b").suffix(1), ["state outside 8"], "another instance")
    XCTAssertEqual(
      transitions("same-uuid-ibeacon").suffix(1), ["state outside 8"],
      "an AltBeacon is no iBeacon, whatever its UUID")
    let ranged = events.filter { $0.kind == .range }.flatMap(\.beacons).compactMap(\.id.beacon)
    XCTAssertTrue(ranged.contains { $0.kind == .altBeacon && $0.major == 1 && $0.minor == 2 })
    XCTAssertTrue(ranged.contains { $0.description == "eddystone:\(namespace):0000000000a1" })
  }

  func testEventsAndMQTTNameEachFormat() throws {
    let alt = TrackedID(kind: .altBeacon, uuid: BeaconUUID(altUUID)!, major: 1, minor: 2)
    var j = JSONLine()
    alt.addFields(to: &j)
    XCTAssertEqual(
      j.line, #"{"format":"altbeacon","uuid":"\#(altUUID)","major":1,"minor":2}"#)
    let eddy = TrackedID(
      eddystoneNamespace: BeaconBytes(hex: namespace)!, instance: BeaconBytes(hex: "0000000000a1")!)
    j = JSONLine()
    eddy.addFields(to: &j)
    XCTAssertEqual(
      j.line, #"{"format":"eddystone","namespace":"\#(namespace)","instance":"0000000000a1"}"#)
    XCTAssertEqual(MQTTTopics.slug(eddy), "eddystone-\(namespace)-0000000000a1")
    XCTAssertEqual(MQTTTopics.slug(alt), "altbeacon-\(altUUID.lowercased())-1-2")
    let ib = TrackedID(uuid: BeaconUUID(altUUID)!, major: 1, minor: 2)
    XCTAssertEqual(MQTTTopics.slug(ib), "\(altUUID.lowercased())-1-2", "iBeacons as before")
    XCTAssertNotEqual(ib, alt)
  }

  func testTheFramesEarshotWritesAreTheFormatsOwn() throws {
    // Each written frame decodes through the classifier as its format.
    let alt = TrackedBeacon(
      id: TrackedID(kind: .altBeacon, uuid: BeaconUUID(altUUID)!, major: 1, minor: 2),
      measuredPower: -59)
    let data = HCIEventEncoder.beaconAdvertisingData(alt)
    XCTAssertEqual(
      data.withUnsafeBytes { $0.hexString },
      "0201061bff1801beac2f234454cf6d4a0fadf2f4911ba9ffa600010002c500")
    let frames = data.withUnsafeBytes { BeaconClassifier.standard.frames(in: $0) }
    guard case .altBeacon(let a)? = frames.first else { return XCTFail("\(frames)") }
    XCTAssertEqual([a.id2, a.id3], [1, 2])
    let eddy = TrackedBeacon(
      id: TrackedID(
        eddystoneNamespace: BeaconBytes(hex: namespace)!,
        instance: BeaconBytes(hex: "0000000000a1")!),
      measuredPower: -59)
    let e = HCIEventEncoder.beaconAdvertisingData(eddy)
    let eFrames = e.withUnsafeBytes { BeaconClassifier.standard.frames(in: $0) }
    guard case .eddystoneUID(let u)? = eFrames.first else { return XCTFail("\(eFrames)") }
    XCTAssertEqual(u.txPowerAt0m, -18, "the 1 m power + 41 dB")
    XCTAssertEqual(e.withUnsafeBytes { TrackedBeacon.decode(advertisingData: $0) }, eddy)
  }

  func testConfigErrorsNameTheKey() {
    func error(_ text: String) -> String {
      do {
        _ = try Config.build(document(text, file: "x.conf"))
        return "no error"
      } catch { return "\(error)" }
    }
    XCTAssertTrue(
      error("[region \"r\"]\naltbeacon = \(altUUID):1:2\nuuid = \(altUUID)\n").contains(
        "x.conf:3: [region \"r\"] uuid: a region names one beacon format; altbeacon and uuid"),
      error("[region \"r\"]\naltbeacon = \(altUUID):1:2\nuuid = \(altUUID)\n"))
    XCTAssertTrue(
      error("[region \"r\"]\neddystone = abc\n").contains("the namespace is 20 hex digits"))
    XCTAssertTrue(
      error("[region \"r\"]\naltbeacon = \(altUUID)\nmajor = 3\n").contains(
        "major is for iBeacons"))
    XCTAssertTrue(error("[region \"r\"]\naltbeacon = \(altUUID):70000\n").contains("0 to 65535"))
  }

  /// `earshot scan --all` lists every frame: telemetry too. beacontools'
  /// TLM vector (test_parser.py::test_eddystone_tlm, its stray last byte
  /// dropped: 2840 mV, 19 °C upstream).
  func testScanAllShowsEveryFrameTelemetryIncluded() throws {
    let data = try XCTUnwrap(bytes(fromHex: "0201060303aafe1116aafe20000b1813000000146700002ac4"))
    let line = data.withUnsafeBytes { d in
      ReportFormatter.reportJSON(
        micros: 1_767_225_600_000_000,
        report: AdvertisingReport(
          pdu: .advNonconnInd, address: BDAddress("C0:01:02:03:04:05")!, addressType: .random,
          rssi: -60, data: d),
        beacon: nil, merged: nil)
    }
    XCTAssertTrue(
      line.contains(
        #""frames":[{"frame":"Eddystone-TLM","battery_mv":2840,"temperature":19.00,"adv_count":5223,"uptime":1094.8}]"#
      ), line)
  }
}
