import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// Every retained topic and payload the bridge shows for one sample of each
/// entity (discovery configs and states), as a real mosquitto holds them,
/// compared byte for byte with Tests/golden/mqtt-entities.txt. The golden
/// list was written by the bridge before its entities became rows of
/// `MQTTEntityKind`: a change of any payload fails here.
/// `EARSHOT_WRITE_GOLDEN=1` writes the file instead (then review its diff).
/// (An extension: it uses the bridge tests' broker and helpers.)
extension MQTTBridgeTests {
  static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("golden/mqtt-entities.txt")

  func testEveryEntityMatchesTheGoldenList() throws {
    let broker = try Broker()
    let loop = try EventLoop()
    let (bridge, _) = try subscribedBridge(loop, broker)
    let uuid = BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!
    let ibeacon = TrackedID(uuid: uuid, major: 1, minor: 10)
    let alt = TrackedID(kind: .altBeacon, uuid: uuid, major: 7, minor: 65535)
    let eddystone = TrackedID(
      kind: .eddystoneUID,
      bytes: [0xED, 0xD1, 0xEB, 0xEA, 0xC0, 0x4E, 0x5D, 0xEF, 0xA0, 0x17]
        + [0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45])

    let at = DecisionTime(micros: 100_000_000)
    bridge.show(MQTTEntities.controls, VolumeShown(level: 0.37, muted: false))
    bridge.show(
      MQTTEntities.findPhone, FindShown(.ringing, requesters: ["ble:phone", "mqtt:button \"x\""]))
    bridge.show(MQTTEntities.region, RegionShown("Desk", .inside))
    bridge.show(MQTTEntities.region, RegionShown("Lab Room", .unknown))
    bridge.show(MQTTEntities.region, RegionShown("Phone/Watch", .outside, tracksDevices: true))
    bridge.show(MQTTEntities.region, RegionShown("Kitchen ü", .inside, tracksDevices: true))
    bridge.beacon(BeaconShown(ibeacon, distance: 1.84, proximity: .near, rssi: -67), at: at)
    bridge.beacon(BeaconShown(alt, distance: nil, proximity: .unknown, rssi: nil), at: at)
    bridge.beacon(BeaconShown(eddystone, distance: 12.3456, proximity: .far, rssi: -90), at: at)
    bridge.show(
      MQTTEntities.telemetry,
      (
        eddystone,
        BeaconTelemetry(
          decided: DecisionTime(micros: 1_234_567_891), shown: WallTime(micros: 1_234_567_891),
          batteryMillivolts: 2950, temperature: 21.5, advertisingCount: 4242,
          uptimeSeconds: 3600.5)
      ))
    bridge.show(
      MQTTEntities.telemetry,
      (
        ibeacon,
        BeaconTelemetry(
          decided: DecisionTime(micros: 5), shown: WallTime(micros: 5), batteryMillivolts: nil,
          temperature: nil, advertisingCount: 0, uptimeSeconds: 0)
      ))
    bridge.show(MQTTEntities.tag, TagShown("Keys", state: "connected", battery: 87))
    bridge.show(MQTTEntities.tag, TagShown("Bag Tag", state: "waiting", battery: nil))
    bridge.show(
      MQTTEntities.scanDuty,
      ScanDutyReport(
        policy: .automatic, power: .battery, timing: ScanTiming(interval: 0x03C0, window: 0x0060),
        mean: [.battery: 0.1634, .mains: 0.25]))
    bridge.show(
      MQTTEntities.trackers,
      [
        TrackerShown(
          number: TrackerNumber(3), family: .findMy, kind: .airTag,
          firstSeen: WallTime(micros: 1_767_225_600_000_000),
          lastSeen: WallTime(micros: 1_767_231_000_000_000), places: 3, sightings: 91)
      ])
    bridge.status("earshot/rooms/agent/testhost", "{\"room\":\"desk\"}")
    try settle(loop)

    let lines = try broker.retained().map { "\($0.key) \($0.value)" }.sorted()
    bridge.close()
    XCTAssertGreaterThan(lines.count, 40)
    let text = lines.joined(separator: "\n") + "\n"
    if ProcessInfo.processInfo.environment["EARSHOT_WRITE_GOLDEN"] == "1" {
      try text.write(to: Self.golden, atomically: true, encoding: .utf8)
      return
    }
    let expected = try String(contentsOf: Self.golden, encoding: .utf8)
    let want = expected.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    XCTAssertEqual(lines.count, want.count)
    for line in Set(want).subtracting(lines).sorted() { XCTFail("missing or changed: \(line)") }
    for line in Set(lines).subtracting(want).sorted() { XCTFail("new or changed: \(line)") }
  }
}
