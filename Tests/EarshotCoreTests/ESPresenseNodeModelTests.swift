import EarshotCore
import XCTest

/// The ESPresense node model against figures worked by hand from the
/// firmware's source (a6f1105e): the first report's bytes and time slot,
/// the 5 s boundaries, the early report on a move, 16 m, `close`.
final class ESPresenseNodeModelTests: XCTestCase {
  let id = "iBeacon:8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182-1-1"  // djb2 mod 64 = 27: slot at 2106 ms
  let t0: UInt64 = 1_767_225_600_000  // a 5 s boundary

  func testTheFirstReportWaitsForItsSlotAndIsByteForByteTheFirmwares() throws {
    var node = ESPresenseNodeModel(room: "Living Room")
    func heard(_ ms: UInt64, _ rssi: Int) -> (topic: String, payload: String)? {
      node.heard(id: id, mac: "c00000000101", power: -59, rssi: rssi, at: t0 + ms)
    }
    // -60 alone: 1.09 m; early by 5000 / 8 ms at most (moved 2.2 × 0.5 m):
    // 625 ms is short of the 2106 ms slot.
    XCTAssertNil(heard(0, -60))
    XCTAssertNil(heard(1000, -62), "mean -61, 1.19 m: 1625 ms is still short of the slot")
    // Three readings: quartiles -63 and -61, all inside the fences, mean
    // -62; 10^(3/27) = 1.29 m; RSSI variance 8/3; distance variance 0.033.
    let first = try XCTUnwrap(heard(2000, -64))
    XCTAssertEqual(first.topic, "espresense/devices/\(id)/living_room")
    XCTAssertEqual(
      first.payload,
      #"{"mac":"c00000000101","id":"\#(id)","rssi@1m":-59,"rssi":-62.00,"rxAdj":0,"rssiVar":2.67,"distance":1.29,"var":0.03,"int":500}"#
    )
    // The next is due at the 5 s boundary; the distance barely moves.
    XCTAssertNil(heard(3000, -62))
    XCTAssertNil(heard(4000, -62))
    let second = try XCTUnwrap(heard(5000, -62))
    XCTAssertTrue(second.payload.contains(#""rssi":-62.00"#), second.payload)
    XCTAssertTrue(
      second.payload.hasSuffix(#""int":714}"#),
      "5000 ms / 7: the count starts at 1, then 6 sightings")
    // A walk away: readings at -75 soon outnumber the near ones and move
    // the mean by metres, so a report comes before the 10 s boundary.
    var early: (topic: String, payload: String)? = nil
    var at: UInt64 = 0
    for k in 0..<8 where early == nil {
      at = 5500 + UInt64(k) * 500
      early = heard(at, -75)
    }
    XCTAssertNotNil(early, "an early report on a move of metres")
    XCTAssertLessThan(at, 10000)
  }

  /// Fifteen seconds of readings at most: old ones leave the mean.
  func testReadingsOlderThanTheWindowLeave() throws {
    var node = ESPresenseNodeModel(room: "hall")
    var last: (topic: String, payload: String)? = nil
    for k in 0..<40 {
      let rssi = k < 20 ? -50 : -70
      if let r = node.heard(
        id: id, mac: "c00000000101", power: -59, rssi: rssi, at: t0 + UInt64(k) * 1000)
      {
        last = r
      }
    }
    // At 39 s only the -70 readings of 24-39 s are in the window.
    XCTAssertTrue(last?.payload.contains(#""rssi":-70.00"#) == true, last?.payload ?? "none")
    XCTAssertFalse(last?.payload.contains("rssiVar") == true, "no variance: not sent")
  }

  func testBeyondSixteenMetresNothingAndCloseIsSaid() {
    var far = ESPresenseNodeModel(room: "hall")
    for k in 0..<30 {
      XCTAssertNil(
        far.heard(id: id, mac: "c00000000101", power: -59, rssi: -95, at: t0 + UInt64(k) * 1000))
    }
    var near = ESPresenseNodeModel(room: "hall")
    var said: String? = nil
    for k in 0..<10 where said == nil {
      said =
        near.heard(id: id, mac: "c00000000101", power: -59, rssi: -35, at: t0 + UInt64(k) * 1000)?
        .payload
    }
    XCTAssertTrue(said?.contains(#""close":true,"int":"#) == true, said ?? "none")
  }
}
