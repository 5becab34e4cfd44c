import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore

/// Runs every vector in ../shared/data/ble/vectors through the decoder its
/// `input_kind` names and checks each value the upstream test asserts.
final class VectorConformanceTests: XCTestCase {
  /// What Earshot made of one vector.
  struct Decoded {
    var accepted = true
    var reports:
      [(
        address: String, rssi: Int?, pdu: AdvertisingPDU, addressType: UInt8, dataLength: Int,
        status: DataStatus, primaryPHY: UInt8, secondaryPHY: UInt8
      )] = []
    var beacons: [TrackedBeacon] = []
    var adCount: Int? = nil
    var flags: Int? = nil
  }

  func decodeEvent(_ bytes: [UInt8], h4: Bool) -> Decoded {
    var d = Decoded()
    var decoder = AdvertisingEventDecoder()
    let outcome = bytes.withUnsafeBytes { raw in
      let body: (AdvertisingReport) -> Void = { r in
        d.reports.append(
          (
            r.address.description.lowercased(), r.rssi.map(Int.init), r.pdu, r.addressType.rawValue,
            r.data.count,
            r.dataStatus, r.primaryPHY, r.secondaryPHY
          ))
        if let b = TrackedBeacon.iBeacon(advertisingData: r.data) { d.beacons.append(b) }
        if d.flags == nil {
          for ad in ADWalker(r.data) where ad.type == ADType.flags && ad.value.count == 1 {
            d.flags = Int(ad.value[0])
          }
        }
      }
      return h4 ? decoder.decode(h4: raw, body) : decoder.decode(event: raw, body)
    }
    if case .reports = outcome {} else { d.accepted = false }
    return d
  }

  func decodeAD(_ bytes: [UInt8]) -> Decoded {
    var d = Decoded()
    bytes.withUnsafeBytes { raw in
      if let b = TrackedBeacon.iBeacon(advertisingData: raw) { d.beacons.append(b) }
      var walker = ADWalker(raw)
      var n = 0
      while let ad = walker.next() {
        n += 1
        if ad.type == ADType.flags && ad.value.count == 1 { d.flags = Int(ad.value[0]) }
      }
      d.adCount = n
      d.accepted = !walker.isMalformed
    }
    return d
  }

  func decode(kind: String, _ bytes: [UInt8]) -> Decoded? {
    if kind.hasPrefix("hci_event_h4") { return decodeEvent(bytes, h4: true) }
    if kind.hasPrefix("hci_event_no_h4") { return decodeEvent(bytes, h4: false) }
    if kind.hasPrefix("adv_report_params") {
      // Parameters from Num_Reports on: wrap them in an LE Meta event header.
      return decodeEvent([0x3E, UInt8(bytes.count + 1), 0x02] + bytes, h4: false)
    }
    if kind.hasPrefix("ad_data") { return decodeAD(bytes) }
    if kind.hasPrefix("mfg_data") || kind.hasPrefix("company_id") {
      var d = Decoded()
      if let b = bytes.withUnsafeBytes({ TrackedBeacon.iBeacon(manufacturerData: $0) }) {
        d.beacons.append(b)
      }
      return d
    }
    if kind.hasPrefix("btle_ll_pdu") {
      var d = Decoded()
      var malformed = false
      bytes.withUnsafeBytes { raw in
        if let r = LinkLayer.report(raw, rssi: nil, malformed: &malformed) {
          d.reports.append(
            (
              r.address.description.lowercased(), nil, r.pdu, r.addressType.rawValue, r.data.count,
              r.dataStatus,
              r.primaryPHY, r.secondaryPHY
            ))
          if let b = TrackedBeacon.iBeacon(advertisingData: r.data) { d.beacons.append(b) }
        }
      }
      d.accepted = !malformed
      return d
    }
    if kind.hasPrefix("hci_cmd_le_set_advertising_data_params") {
      // Length byte, then 31 bytes of which `length` are significant.
      guard let n = bytes.first else { return nil }
      return decodeAD(Array(bytes.dropFirst().prefix(Int(n))))
    }
    return nil
  }

  func testEveryVectorGivesItsExpectedValues() throws {
    let dir = try SharedData.url("ble/vectors")
    let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
      $0.hasSuffix(".json")
    }.sorted()
    XCTAssertGreaterThanOrEqual(files.count, 10)
    var checked = 0
    var total = 0
    var values = 0
    for file in files {
      let json = try JSONSerialization.jsonObject(
        with: Data(contentsOf: dir.appendingPathComponent(file)))
      let vectors = try XCTUnwrap((json as? [String: Any])?["vectors"] as? [[String: Any]], file)
      total += vectors.count
      for v in vectors {
        let name = "\(file): \(v["name"] as? String ?? "?")"
        let hexText = try XCTUnwrap(v["hex"] as? String, name)
        let bytes = try XCTUnwrap(EarshotTestHex.parse(hexText), name)
        // ble_monitor's vectors are H4 events without an input_kind field.
        let kind = v["input_kind"] as? String ?? "hci_event_h4"
        guard let d = decode(kind: kind, bytes) else {
          XCTFail("\(name): no decoder for input kind '\(kind)'")
          continue
        }
        checked += 1
        let expected = v["expected"] as? [String: Any] ?? [:]

        // Frames a strict parser must reject (beacontools' 41 3E headers).
        if kind.hasPrefix("hci_event_h4"), bytes.first != 0x04 {
          XCTAssertFalse(d.accepted, "\(name): a non-H4 event must be rejected")
          XCTAssertTrue(d.reports.isEmpty, "\(name)")
          values += 1
          continue
        }
        if let isBeacon = expected["is_ibeacon"] as? Bool {
          XCTAssertEqual(!d.beacons.isEmpty, isBeacon, "\(name): is_ibeacon")
          values += 1
        }
        if expected["source_expects_no_result"] as? Bool == true
          || expected["parse_result"] is NSNull
        {
          XCTAssertTrue(d.beacons.isEmpty, "\(name): must not yield an iBeacon")
          values += 1
        }
        if expected["callback_called"] as? Bool == false {
          XCTAssertTrue(d.reports.isEmpty, "\(name)")
          values += 1
        }
        let beacon = d.beacons.first
        if let uuid = expected["uuid"] as? String {
          XCTAssertEqual(beacon?.uuid.description, uuid.uppercased(), "\(name): uuid")
          values += 1
        }
        if let major = expected["major"] as? Int {
          XCTAssertEqual(beacon.map { Int($0.major) }, major, "\(name): major")
          values += 1
        }
        if let minor = expected["minor"] as? Int {
          XCTAssertEqual(beacon.map { Int($0.minor) }, minor, "\(name): minor")
          values += 1
        }
        if let power = expected["tx_power"] as? Int, beacon != nil {
          XCTAssertEqual(beacon.map { Int($0.measuredPower) }, power, "\(name): measured power")
          values += 1
        }
        if let count = expected["ibeacon_count"] as? Int {
          XCTAssertEqual(d.beacons.count, count, "\(name): iBeacon count")
          values += 1
        }
        if let count = expected["num_reports"] as? Int {
          XCTAssertEqual(d.reports.count, count, "\(name): reports")
          values += 1
        }
        if let count = expected["pdu_count"] as? Int {
          XCTAssertEqual(d.adCount, count, "\(name): AD structures")
          values += 1
        }
        if let flags = expected["flags"] as? Int {
          XCTAssertEqual(d.flags, flags, "\(name): flags")
          values += 1
        }
        let first = d.reports.first
        if let mac = (expected["bt_addr"] ?? expected["mac"]) as? String {
          XCTAssertEqual(first?.address, mac.lowercased(), "\(name): address")
          values += 1
        }
        if let rssi = expected["rssi"] as? Int, !kind.hasPrefix("ad_data"), !kind.hasPrefix("mfg"),
          !kind.hasPrefix("company")
        {
          XCTAssertEqual(first?.rssi, rssi, "\(name): rssi")
          values += 1
        }
        if let length = expected["data_length"] as? Int {
          XCTAssertEqual(first?.dataLength, length, "\(name): data length")
          values += 1
        }
        if let type = expected["address_type"] as? Int {
          XCTAssertEqual(first.map { Int($0.addressType) }, type, "\(name): address type")
          values += 1
        }
        if let type = expected["event_type"] as? Int {
          XCTAssertEqual(
            first?.pdu, AdvertisingPDU(legacyEventType: UInt8(type)), "\(name): event type")
          values += 1
        }
        if let event = expected["event"] as? String {
          XCTAssertEqual(first?.pdu, event == "scanResponse" ? .scanRsp : .advInd, "\(name): event")
          values += 1
        }
        if let status = expected["data_status"] as? String {
          XCTAssertEqual(first?.status.name, status, "\(name): data status")
          values += 1
        }
        if let bits = expected["event_type_bits"] as? [String], bits.contains("legacy_pdu") {
          // connectable + scannable legacy = ADV_IND.
          XCTAssertEqual(
            first?.pdu, bits.contains("connectable") ? .advInd : .advScanInd,
            "\(name): event type bits")
          values += 1
        }
        if let phy = expected["primary_phy"] as? Int {
          // A real Apple-controller capture has 0x81 here for LE 1M: bit 7
          // is not part of the PHY code, so only the low bits are compared.
          XCTAssertEqual(first.map { Int($0.primaryPHY & 0x7F) }, phy, "\(name): primary PHY")
          values += 1
        }
        if let phy = expected["secondary_phy"] as? Int {
          XCTAssertEqual(first.map { Int($0.secondaryPHY) }, phy, "\(name): secondary PHY")
          values += 1
        }
        // Every vector that is a well-formed HCI event must be accepted.
        if kind.hasPrefix("hci_event") || kind.hasPrefix("adv_report_params") {
          XCTAssertTrue(d.accepted, "\(name): rejected a well-formed event")
        }
      }
    }
    XCTAssertEqual(checked, total, "every vector has a decoder")
    XCTAssertGreaterThan(total, 140, "vectors found")
    XCTAssertGreaterThan(values, 150, "expected values compared")
  }
}
