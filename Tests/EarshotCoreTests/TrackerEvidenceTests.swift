import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// A tracker's evidence as exported and drawn: places, moves, the CSV
/// columns, JSON read back as written, the plot's marks.
final class TrackerEvidenceTests: XCTestCase {
  static let t0 = WallTime(micros: 1_767_225_600_000_000)  // 2026-01-01 00:00 UTC

  static func at(_ minutes: Int) -> WallTime { t0 + .seconds(60 * minutes) }

  static let sample = TrackerEvidence(
    number: TrackerNumber(4), family: .findMy, kind: .airTag,
    address: BDAddress("C3:11:22:33:44:55")!, following: at(70),
    sightings: [
      .init(time: at(0), place: nil, rssi: -70),
      .init(time: at(10), place: PlaceID(1), rssi: -61),
      .init(time: at(40), place: PlaceID(2), rssi: nil),
      .init(time: at(45), place: nil, rssi: -58),
      .init(time: at(55), place: PlaceID(2), rssi: -59),
      .init(time: at(70), place: PlaceID(1), rssi: -60),
    ])

  func testPlacesAndMovesSkipUnknownPlaces() {
    let e = Self.sample
    XCTAssertEqual(e.places, [PlaceID(1), PlaceID(2)])
    // 1 -> 2 at 40; the unknown place at 45 is no move; 2 -> 1 at 70.
    XCTAssertEqual(e.moves.map(\.time), [Self.at(40), Self.at(70)])
    XCTAssertEqual(e.moves.map(\.from), [PlaceID(1), PlaceID(2)])
    XCTAssertEqual(e.moves.map(\.to), [PlaceID(2), PlaceID(1)])
  }

  func testCSVRowsHoldEachColumn() {
    XCTAssertEqual(
      TrackerEvidence.csvHeader, "tracker,protocol,kind,address,time,unix_s,place,rssi,moved,alert")
    XCTAssertEqual(
      Self.sample.csvRows,
      [
        "4,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:00:00Z,1767225600.000,,-70,0,0",
        "4,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:10:00Z,1767226200.000,1,-61,0,0",
        "4,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:40:00Z,1767228000.000,2,,1,0",
        "4,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:45:00Z,1767228300.000,,-58,0,0",
        "4,find_my,airtag,C3:11:22:33:44:55,2026-01-01T00:55:00Z,1767228900.000,2,-59,0,0",
        "4,find_my,airtag,C3:11:22:33:44:55,2026-01-01T01:10:00Z,1767229800.000,1,-60,1,1",
      ])
  }

  func testJSONReadsBackAsWritten() throws {
    let text = Self.sample.json.encoded
    XCTAssertTrue(
      text.hasPrefix(
        #"{"tracker":4,"protocol":"find_my","kind":"airtag","address":"C3:11:22:33:44:55","following":"2026-01-01T01:10:00Z""#
      ), text)
    XCTAssertTrue(text.contains(#""places":[1,2],"moves":[{"time":"2026-01-01T00:40:00Z""#), text)
    let parsed = try JSONParser.parse(text)
    XCTAssertEqual(TrackerEvidence(json: parsed), Self.sample)
    var unfollowed = Self.sample
    unfollowed.following = nil
    XCTAssertEqual(TrackerEvidence(json: try JSONParser.parse(unfollowed.json.encoded)), unfollowed)
    // Not evidence: nil, never a crash.
    for bad in [#"{}"#, #"{"tracker":0}"#, #"[1]"#, #"{"tracker":1,"protocol":"x"}"#] {
      XCTAssertNil(TrackerEvidence(json: try JSONParser.parse(bad)), bad)
    }
  }

  func testThePlotHasARowPerPlaceAMarkPerSightingAndTheAlert() {
    let svg = TrackerEvidencePlot.svg(Self.sample)
    XCTAssertTrue(svg.hasPrefix("<?xml"), svg)
    XCTAssertEqual(svg.components(separatedBy: "class=\"sighting\"").count - 1, 6)
    XCTAssertEqual(svg.components(separatedBy: "data-place=\"unknown\"").count - 1, 2)
    XCTAssertEqual(svg.components(separatedBy: "data-place=\"2\"").count - 1, 2)
    XCTAssertEqual(svg.components(separatedBy: "class=\"alert\"").count - 1, 1)
    for row in [">place 1<", ">place 2<", ">unknown<"] { XCTAssertTrue(svg.contains(row), row) }
    XCTAssertTrue(svg.contains("6 sighting(s) kept in 2 place(s), 2 move(s)"), svg)
    // No evidence: a plot that says so.
    var empty = Self.sample
    empty.sightings = []
    empty.following = nil
    XCTAssertTrue(TrackerEvidencePlot.svg(empty).contains("No sightings kept."))
  }

  /// The watch keeps each sighting's signal with its place.
  func testTheWatchKeepsTheSignalOfEachSighting() {
    var w = TrackerWatch()
    let a = BDAddress("C1:AA:BB:CC:DD:01")!
    let frame = TrackerFrame.decode(
      advertisingData: TrackerAirFrame.findMySeparated(kind: 1, key: a.raw), address: a)!
    _ = w.handle(.tracker(frame, address: a, rssi: -71), at: .zero + .seconds(1))
    _ = w.handle(.tracker(frame, address: a, rssi: nil), at: .zero + .seconds(20 * 60))
    XCTAssertEqual(w.evidence(of: TrackerNumber(1)).map(\.rssi), [-71, nil])
    // docs/trackers.md's memory figure: 512 sightings of 24 bytes per tracker.
    XCTAssertEqual(MemoryLayout<TrackerSighting>.stride, 24)
    XCTAssertEqual(TrackerWatch.Settings().maximumEvidence, 512)
  }
}
