import XCTest

@testable import EarshotCore

/// The guarantees `RegionMonitor`'s parts state in their doc comments,
/// each part alone (the monitor's own tests cover them together).
final class MonitorPartsTests: XCTestCase {
  let phone = BDAddress("AA:BB:CC:DD:EE:01")!
  let s: Int64 = 1_000_000

  func testANameIsAskedOncePerQuietSpellAndRepeatedBeforeAnExit() {
    var names = NameRequests()
    XCTAssertTrue(names.ask(0, at: phone, lastHeard: 0, at: 10 * s))
    XCTAssertTrue(names.ask(0, at: phone, lastHeard: 0, at: 11 * s), "held for the answer")
    XCTAssertEqual(names.take(), [phone], "handed over once")
    XCTAssertEqual(names.take(), [])
    XCTAssertEqual(names.hold(of: 0), 10 * s + NameRequests.timeoutMicros)
    // Found: present for `every`, then asked again.
    XCTAssertTrue(names.answered(0, found: true, at: 12 * s))
    XCTAssertEqual(names.hold(of: 0), 12 * s + NameRequests.everyMicros)
    XCTAssertFalse(names.answered(1, found: true, at: 12 * s), "nothing asked of device 1")
    // Not found: asked again `repeats` times, then the exit goes ahead.
    var t = 30 * s
    var asked = 0
    while names.ask(0, at: phone, lastHeard: 12 * s, at: t) {
      asked += 1
      _ = names.take()
      XCTAssertTrue(names.answered(0, found: false, at: t + s))
      t += 2 * s
      XCTAssertLessThan(asked, 10)
    }
    XCTAssertEqual(asked, NameRequests.repeats + 1, "the first request and its repeats")
    XCTAssertNil(names.hold(of: 0))
    // Heard: the count starts again, but not within `every` of the last
    // request unless heard since it.
    names.heard(0)
    XCTAssertFalse(names.ask(0, at: phone, lastHeard: t - 5 * s, at: t))
    XCTAssertTrue(names.ask(0, at: phone, lastHeard: t, at: t + s))
  }

  func testAnUnansweredRequestCountsAsAMiss() {
    var names = NameRequests()
    var t = 0 * s
    var asked = 0
    // Never answered: each ask after the hold counts the last as missed.
    while names.ask(0, at: phone, lastHeard: nil, at: t) {
      asked += 1
      t += NameRequests.timeoutMicros + s
    }
    XCTAssertEqual(asked, NameRequests.repeats + 1)
  }

  func testListeningCountsOnlyWhileScanning() {
    var scan = ScanListening()
    XCTAssertFalse(scan.isScanning)
    XCTAssertTrue(scan.heard(at: 0), "a report proves someone scans")
    XCTAssertFalse(scan.heard(at: s))
    XCTAssertTrue(scan.pause(at: 10 * s))
    XCTAssertFalse(scan.pause(at: 11 * s), "already paused")
    XCTAssertTrue(scan.heard(at: 20 * s), "reports resume it")
    let full: (Double) -> Double = { _ in 1 }
    XCTAssertEqual(scan.clock.accumulated(from: 0, to: 30 * s, rate: full), 20, accuracy: 1e-9)
    scan.down(at: 30 * s)
    XCTAssertEqual(scan.stoppedAt, 30 * s)
    scan.begin(at: 40 * s)
    XCTAssertEqual(
      scan.clock.accumulated(from: 0, to: 50 * s, rate: full), 10, accuracy: 1e-9,
      "nothing before the present scanning counts")
    // Gaps are learnt only well into a full-duty span.
    XCTAssertTrue(scan.learnsGaps(at: 41 * s), "never lowered: learns at once")
    XCTAssertTrue(scan.setDuty(0.2, at: 50 * s))
    XCTAssertFalse(scan.setDuty(0.2, at: 51 * s))
    XCTAssertFalse(scan.learnsGaps(at: 55 * s))
    XCTAssertTrue(scan.setDuty(5, at: 60 * s))
    XCTAssertEqual(scan.duty, 1, "kept within 0.001...1")
    XCTAssertFalse(scan.learnsGaps(at: 60 * s + ScanListening.learnAfterFullMicros - 1))
    XCTAssertTrue(scan.learnsGaps(at: 60 * s + ScanListening.learnAfterFullMicros))
  }

  func testTagAbsenceCountsOnlyOnceKnown() {
    var tags = TagLinks()
    let span = 30 * s
    XCTAssertNil(tags.allAbsent(["keys"], for: span, watched: 0), "no answer yet: no exit")
    XCTAssertEqual(tags.absent("keys", at: 50 * s), .firstAnswer)
    XCTAssertEqual(
      tags.allAbsent(["keys"], for: span, watched: 0), 50 * s,
      "never connected: from watching, but not before it was known")
    tags.connected("keys")
    XCTAssertTrue(tags.anyConnected(["bag", "keys"]))
    XCTAssertNil(tags.allAbsent(["keys"], for: span, watched: 0))
    XCTAssertEqual(tags.absent("keys", at: 100 * s), .lost)
    XCTAssertEqual(tags.absent("keys", at: 110 * s), .unchanged)
    XCTAssertEqual(tags.allAbsent(["keys"], for: span, watched: 0), 130 * s)
    XCTAssertNil(tags.allAbsent(["keys", "bag"], for: span, watched: 0), "bag never answered")
  }

  func testADevicesLastSightingSurvivesAReload() throws {
    var region = RegionConfig(name: "desk", line: 1)
    region.devices = [phone]
    var routing = DeviceRouting(cipher: nil, rooms: [])
    XCTAssertFalse(routing.watches)
    routing.configure([region])
    XCTAssertTrue(routing.watches)
    let n = try XCTUnwrap(routing.resolve(phone, type: .public))
    XCTAssertEqual(routing.regionsOf[n], [0])
    routing.heard(n, at: 5 * s)
    var other = RegionConfig(name: "hall", line: 9)
    other.devices = [phone]
    routing.configure([other, region])
    let m = try XCTUnwrap(routing.resolve(phone, type: .public))
    XCTAssertEqual(routing.regionsOf[m], [0, 1])
    XCTAssertEqual(routing.lastHeard(address: phone), 5 * s, "carried over by identity")
    routing.configure([])
    XCTAssertNil(routing.resolve(phone, type: .public), "no longer known")
    XCTAssertFalse(routing.watches)
  }
}
