import EarshotCore
import XCTest

/// `TrackedMatch`: the one parser and matching rule that regions, rooms'
/// `track` and `earshot log --beacon` share, for all three formats.
final class TrackedMatchTests: XCTestCase {
  let uuid = BeaconUUID("8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182")!
  var iBeacon: TrackedID { TrackedID(uuid: uuid, major: 1, minor: 10) }
  var altBeacon: TrackedID { TrackedID(kind: .altBeacon, uuid: uuid, major: 1, minor: 10) }
  let eddystone = TrackedID(
    eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
    instance: BeaconBytes(hex: "000000000001")!)
  let otherInstance = TrackedID(
    eddystoneNamespace: BeaconBytes(hex: "8f2c1a3e5b7d4e90a1c2")!,
    instance: BeaconBytes(hex: "0000000000ff")!)

  func testEachFormMatchesItsOwnFormatOnly() throws {
    let i = try TrackedMatch.parse("\(uuid):1")
    XCTAssertTrue(i.matches(iBeacon))
    XCTAssertFalse(i.matches(altBeacon), "same numbers, other format")
    let a = try TrackedMatch.parse("altbeacon:\(uuid):1:10")
    XCTAssertTrue(a.matches(altBeacon))
    XCTAssertFalse(a.matches(iBeacon))
    XCTAssertFalse(try TrackedMatch.parse("altbeacon:\(uuid):1:11").matches(altBeacon))
    let ns = try TrackedMatch.parse("eddystone:8f2c1a3e5b7d4e90a1c2")
    XCTAssertTrue(ns.matches(eddystone))
    XCTAssertTrue(ns.matches(otherInstance), "a namespace covers every instance")
    XCTAssertNil(ns.wholeUUID, "instances vary: no index lookup by the whole field")
    let one = try TrackedMatch.parse("EDDYSTONE:8F2C1A3E5B7D4E90A1C2:000000000001")
    XCTAssertTrue(one.matches(eddystone))
    XCTAssertFalse(one.matches(otherInstance))
    XCTAssertEqual(one.wholeUUID, eddystone.uuid)
    XCTAssertTrue(try TrackedMatch.parse("ibeacon:\(uuid):1:10").matches(iBeacon))
  }

  func testDescriptionParsesBackAndSingleNamesOneBeacon() throws {
    for text in [
      "\(uuid)", "\(uuid):1", "\(uuid):1:10", "altbeacon:\(uuid)", "altbeacon:\(uuid):1:10",
      "eddystone:8f2c1a3e5b7d4e90a1c2", "eddystone:8f2c1a3e5b7d4e90a1c2:000000000001",
    ] {
      let m = try TrackedMatch.parse(text)
      XCTAssertEqual(m.description, text)
      XCTAssertEqual(try TrackedMatch.parse(m.description), m)
    }
    XCTAssertNil(try TrackedMatch.parse("\(uuid):1").single)
    XCTAssertNil(try TrackedMatch.parse("eddystone:8f2c1a3e5b7d4e90a1c2").single)
    for id in [iBeacon, altBeacon, eddystone] {
      XCTAssertEqual(TrackedID.parse(id.description), id, "\(id)")
    }
  }

  func testBadFormsSayWhatWasExpected() {
    for (text, says) in [
      ("\(uuid):1:2:3", "altbeacon:ID1"), ("\(uuid):x", "'x'"), ("nope", "not a UUID"),
      ("altbeacon:\(uuid):70000", "0 to 65535"), ("eddystone:8f2c", "20 hex digits"),
      ("eddystone:8f2c1a3e5b7d4e90a1c2:01", "12 hex digits"),
    ] {
      XCTAssertThrowsError(try TrackedMatch.parse(text), text) {
        XCTAssertTrue("\($0)".contains(says), "\(text): \($0)")
      }
    }
  }

  func testRegionsMatchThroughTheSameRule() throws {
    var r = RegionConfig(name: "hall", line: 1)
    XCTAssertNil(r.beacons, "a region without beacons matches none")
    XCTAssertFalse(r.matches(iBeacon))
    r.format = .eddystoneUID
    r.uuid = eddystone.uuid
    XCTAssertTrue(r.matches(otherInstance), "instance not given: the namespace counts")
    r.matchesInstance = true
    XCTAssertFalse(r.matches(otherInstance))
    XCTAssertTrue(r.matches(eddystone))
  }

  func testRoomsTopicsCarryEveryFormat() {
    for id in [iBeacon, altBeacon, eddystone] {
      let subject = RoomSubject.beacon(id)
      XCTAssertEqual(RoomSubject(slug: Substring(subject.slug)), subject, subject.slug)
    }
    XCTAssertNil(RoomSubject(slug: "eddystone-8F2C1A3E5B7D4E90A1C2-000000000001"), "upper case")
    XCTAssertNil(RoomSubject(slug: "eddystone-8f2c1a3e5b7d4e90a1c2-0001"))
    XCTAssertNil(RoomSubject(slug: "altbeacon-\(uuid)-1"))
  }
}
