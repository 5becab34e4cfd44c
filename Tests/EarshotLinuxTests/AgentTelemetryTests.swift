import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// Eddystone-TLM through the whole agent: a capture of a UID beacon that
/// interleaves TLM frames (and a stranger's TLM from another address) is
/// replayed into `earshot run` with a real mosquitto and a proximity log;
/// the battery reaches Home Assistant's discovery and state topics,
/// `status` and the log, joined to the right beacon.
extension AgentIntegrationTests {
  func testEddystoneTelemetryReachesStatusTheLogAndHomeAssistant() throws {
    let broker = try Broker()
    let namespace = "8f2c1a3e5b7d4e90a1c2"
    let id = TrackedID(
      eddystoneNamespace: BeaconBytes(hex: namespace)!, instance: BeaconBytes(hex: "0000000000a1")!)
    let beaconAddress = BDAddress("C1:00:00:00:00:A1")!
    let stranger = BDAddress("C1:00:00:00:00:B2")!
    let start = Int64(1_767_225_600) * 1_000_000
    var c = SyntheticCapture()
    func tlm(_ mv: UInt16, _ n: Int) -> [UInt8] {
      HCIEventEncoder.eddystoneTLMAdvertisingData(
        EddystoneTLM(
          batteryMillivolts: mv, temperatureRaw: 0x1580, advertisingCount: UInt32(1000 + n),
          uptimeTenths: UInt32(36_000 + 10 * n)))
    }
    func append(_ t: Int64, _ data: [UInt8], _ address: BDAddress) {
      data.withUnsafeBytes { d in
        c.append(
          micros: t,
          report: AdvertisingReport(
            pdu: .advNonconnInd, address: address, addressType: .random, rssi: -60, data: d))
      }
    }
    // 120 s: a UID frame every second, a TLM every tenth; the battery
    // falls from 3000 to 2900 mV at 60 s. The stranger sends only TLM.
    for n in 0..<120 {
      let t = start + Int64(n) * 1_000_000
      append(
        t, HCIEventEncoder.beaconAdvertisingData(TrackedBeacon(id: id, measuredPower: -59)),
        beaconAddress
      )
      if n % 10 == 5 { append(t + 300_000, tlm(n < 60 ? 3000 : 2900, n), beaconAddress) }
      if n % 10 == 7 { append(t + 400_000, tlm(1111, n), stranger) }
    }
    let capture = dir + "/tlm.btsnoop"
    try Data(c.bytes).write(to: URL(fileURLWithPath: capture))
    let db = dir + "/log.sqlite"
    let config = """
      [region "keys"]
      eddystone = \(namespace):0000000000a1
      exit_after = 600
      [log]
      enabled = true
      path = \(db)

      """ + mqttSection(broker)
    let agent = try AgentProcess(config: config, arguments: ["--input", capture])
    let slug = MQTTTopics.slug(id)
    let telemetryTopic = "\(base)/beacon/\(slug)/telemetry"
    var r: [String: String] = [:]
    XCTAssertTrue(
      try eventually {
        r = try broker.retained()
        return r[telemetryTopic]?.contains("2900") == true
      }, "\(r.keys.sorted())\n\(agent.log)")
    let state = try JSONParser.parse(try XCTUnwrap(r[telemetryTopic]))
    XCTAssertEqual(state["battery_mv"]?.number, 2900)
    XCTAssertEqual(state["temperature"]?.number, 21.5)
    XCTAssertEqual(state["adv_count"]?.number, 1065, "the reading of 65 s: the first below 3000")
    let battery = try JSONParser.parse(
      try XCTUnwrap(r["homeassistant/sensor/\(node)/beacon_\(slug)_battery/config"], "\(r.keys)"))
    XCTAssertEqual(battery["device_class"]?.string, "voltage")
    XCTAssertEqual(battery["unit_of_measurement"]?.string, "mV")
    XCTAssertEqual(battery["state_topic"]?.string, telemetryTopic)
    XCTAssertEqual(battery["value_template"]?.string, "{{ value_json.battery_mv }}")
    XCTAssertNotNil(r["homeassistant/sensor/\(node)/beacon_\(slug)_temperature/config"])
    XCTAssertFalse(
      r.values.contains { $0.contains("\"battery_mv\":1111") }, "the stranger's TLM joins nothing")

    let status = try agent.client().ok(.status)
    let beacon = try XCTUnwrap(status["beacons"]?.array?.first, "\(status)")
    XCTAssertEqual(beacon["region"]?.string, "keys")
    XCTAssertEqual(beacon["telemetry"]?["battery_mv"]?.number, 2900, "\(beacon)")
    XCTAssertEqual(beacon["telemetry"]?["adv_count"]?.number, 1115, "status shows the newest")
    XCTAssertEqual(agent.stop(), 0, agent.log)

    // The log: the first reading, then the one where the battery moved.
    let log = try Earshot.run([
      "log", "--db", db, "--format", "json", "--beacon", "eddystone:\(namespace)",
    ])
    XCTAssertEqual(log.status, 0, log.stderr)
    let rows = log.stdout.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
      .filter { $0["type"]?.string == "telemetry" }
    XCTAssertEqual(rows.map { $0["battery_mv"]?.number }, [3000, 2900], log.stdout)
    XCTAssertEqual(rows.first?["t"]?.number, Double(start + 5_300_000) / 1e6)
  }
}
