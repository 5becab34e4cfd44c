import EarshotCore
import XCTest

/// The two pure rules that keep peers from locking Home Assistant out or
/// filling the log: `HandshakeAdmission` (who gets a slot) and `LogLimiter`
/// (what bad input is logged), on an injected clock.
final class BadInputLimitsTests: XCTestCase {
  // MARK: HandshakeAdmission

  func testANewcomerDisplacesTheOldestUnprovenAndNeverAProvenClient() {
    var a = HandshakeAdmission<Int>(capacity: 3)
    XCTAssertEqual(a.arrive(1), .admit)
    XCTAssertEqual(a.arrive(2), .admit)
    XCTAssertEqual(a.arrive(3), .admit)
    a.prove(2)
    // Full: the oldest unproven (1) goes, then 3; 2 said Hello and stays.
    XCTAssertEqual(a.arrive(4), .admitDisplacing(1))
    XCTAssertEqual(a.arrive(5), .admitDisplacing(3))
    a.prove(4)
    a.prove(5)
    // Every slot proven: refused, and nothing was displaced.
    XCTAssertEqual(a.arrive(6), .refuse)
    XCTAssertEqual(a.count, 3)
    XCTAssertEqual(a.unprovenCount, 0)
    // One leaves: the next newcomer is admitted outright.
    a.leave(4)
    XCTAssertEqual(a.arrive(7), .admit)
    XCTAssertEqual(a.count, 3)
  }

  /// The issue's case, as a table of events: eight silent connections,
  /// each reopened as soon as it is closed; a client arrives and proves
  /// itself after some of the reopenings. However many come between its
  /// arrival and its Hello (fewer than the silent ones ahead of it), it
  /// is in, and once proven no reopening displaces it.
  func testSilentConnectionsReopenedWhenClosedCannotStarveAClient() {
    for reopeningsBeforeHello in 0..<8 {
      var a = HandshakeAdmission<Int>(capacity: 8)
      var next = 1
      for _ in 0..<8 {
        XCTAssertEqual(a.arrive(next), .admit)
        next += 1
      }
      let client = -1  // never an id the silent ones take
      var pending: [Int] = []  // silent ones closed, about to reopen
      if case .admitDisplacing(let gone) = a.arrive(client) {
        pending.append(gone)
      } else {
        XCTFail("the client was not admitted")
      }
      // Each displaced silent connection reopens, displacing the next.
      for _ in 0..<reopeningsBeforeHello {
        pending.removeFirst()
        switch a.arrive(next) {
        case .admitDisplacing(let gone):
          XCTAssertNotEqual(gone, client, "displaced after \(reopeningsBeforeHello)")
          pending.append(gone)
        default: XCTFail("a silent connection could not reopen")
        }
        next += 1
      }
      a.prove(client)
      XCTAssertTrue(a.isProven(client))
      // A thousand more reopenings: the client keeps its slot.
      for _ in 0..<1000 {
        guard case .admitDisplacing(let gone) = a.arrive(next) else {
          return XCTFail("a silent connection could not reopen")
        }
        XCTAssertNotEqual(gone, client)
        next += 1
      }
      XCTAssertTrue(a.isProven(client))
      XCTAssertEqual(a.count, 8)
    }
  }

  func testAClientThatNeverProvesItselfGoesInTurn() {
    var a = HandshakeAdmission<Int>(capacity: 2)
    _ = a.arrive(1)
    _ = a.arrive(2)
    // 3 displaces 1; 4 displaces 2; 5 displaces 3: oldest first, newest last.
    XCTAssertEqual(a.arrive(3), .admitDisplacing(1))
    XCTAssertEqual(a.arrive(4), .admitDisplacing(2))
    XCTAssertEqual(a.arrive(5), .admitDisplacing(3))
    // Leaving twice, or proving one that left, changes nothing.
    a.leave(4)
    a.leave(4)
    a.prove(4)
    XCTAssertEqual(a.count, 1)
    XCTAssertEqual(a.arrive(6), .admit)
  }

  // MARK: LogLimiter

  static let refused = LogLimiter.Kind("refused") { n, source, window in
    "refused \(LogLimiter.Kind.count(n, "more connection")) from \(source) \(window)"
  }
  static let malformed = LogLimiter.Kind("malformed") { n, source, window in
    "ignored \(LogLimiter.Kind.count(n, "more malformed message")) from \(source) \(window)"
  }

  func at(_ seconds: Double) -> MonotonicTime { MonotonicTime.zero.adding(seconds: seconds) }

  func testAFloodIsItsFirstLineThenOneSummaryPerInterval() {
    var log = LogLimiter(interval: 60)
    var lines: [String] = []
    // 500 refusals over 5 s: the first line, nothing more yet.
    for i in 0..<500 {
      lines += log.note(Self.refused, from: "127.0.0.1", at: at(Double(i) / 100)) {
        "refused 127.0.0.1:\(40000 + i)"
      }
    }
    XCTAssertEqual(lines, ["refused 127.0.0.1:40000"])
    XCTAssertEqual(log.nextDeadline, at(60))
    XCTAssertEqual(log.advance(to: at(59.9)), [])
    // The window ends: one summary.
    XCTAssertEqual(
      log.advance(to: at(60)), ["refused 499 more connections from 127.0.0.1 in the last 60 s"])
    // It goes on at one a second for three minutes: one summary a minute.
    lines = []
    for s in 60..<240 {
      let t = Double(s) + 0.5
      lines += log.note(Self.refused, from: "127.0.0.1", at: at(t)) { "whole line" }
      if let d = log.nextDeadline, d <= at(t + 0.5) { lines += log.advance(to: d) }
    }
    XCTAssertEqual(
      lines,
      [
        "refused 60 more connections from 127.0.0.1 in the last 60 s",
        "refused 60 more connections from 127.0.0.1 in the last 60 s",
        "refused 60 more connections from 127.0.0.1 in the last 60 s",
      ])
    // A quiet window closes the source: its next refusal is a whole line again.
    XCTAssertEqual(log.advance(to: at(300)), [])
    XCTAssertEqual(log.openWindows, 0)
    XCTAssertNil(log.nextDeadline)
    XCTAssertEqual(
      log.note(Self.refused, from: "127.0.0.1", at: at(400)) { "refused again" }, ["refused again"])
    XCTAssertEqual(log.totals["refused"], 500 + 180 + 1)
  }

  func testSourcesAndKindsAreCountedApartAndTheLineIsBuiltOnlyWhenLogged() {
    var log = LogLimiter(interval: 10)
    var built = 0
    var lines: [String] = []
    for i in 0..<30 {
      let source = i % 2 == 0 ? "192.0.2.1" : "192.0.2.2"
      let kind = i % 3 == 0 ? Self.malformed : Self.refused
      lines += log.note(kind, from: source, at: at(Double(i) / 10)) {
        built += 1
        return "\(kind.name) \(source)"
      }
    }
    XCTAssertEqual(lines.count, 4)
    XCTAssertEqual(built, 4, "a counted occurrence builds no line")
    XCTAssertEqual(
      log.advance(to: at(10.3)).sorted(),
      [
        "ignored 4 more malformed messages from 192.0.2.1 in the last 10 s",
        "ignored 4 more malformed messages from 192.0.2.2 in the last 10 s",
        "refused 9 more connections from 192.0.2.1 in the last 10 s",
        "refused 9 more connections from 192.0.2.2 in the last 10 s",
      ])
  }

  /// A million sources (an address each): memory stays at `maxSources`
  /// windows plus one per kind, lines at two per window each, and every
  /// occurrence is in a line or a count.
  func testMemoryAndLinesAreBoundedWhateverTheNumberOfSources() {
    var log = LogLimiter(interval: 60, maxSources: 16)
    var lines: [String] = []
    let n = 100_000
    for i in 0..<n {
      lines += log.note(Self.refused, from: "10.\(i >> 16).\((i >> 8) & 255).\(i & 255)", at: at(0))
      { "refused one" }
      XCTAssertLessThanOrEqual(log.openWindows, 17)
    }
    XCTAssertEqual(lines.count, 17, "16 sources and the first of the others")
    let summaries = log.advance(to: at(60))
    XCTAssertEqual(
      summaries, ["refused \(n - 17) more connections from other sources in the last 60 s"])
    XCTAssertEqual(log.totals["refused"], n)
  }

  func testFinishSaysWhatIsStillCounted() {
    var log = LogLimiter(interval: 60)
    for i in 0..<2000 {
      _ = log.note(Self.malformed, from: "earshot/x/command/volume", at: at(Double(i) / 1000)) {
        "first"
      }
    }
    _ = log.note(Self.refused, from: "uid 1000", at: at(3)) { "one" }
    XCTAssertEqual(
      log.finish(at: at(12.4)),
      ["ignored 1999 more malformed messages from earshot/x/command/volume in the last 12 s"])
    XCTAssertEqual(log.openWindows, 0)
    XCTAssertEqual(log.finish(at: at(13)), [])
  }

  /// A late timer (a busy loop) says the span it really covered.
  func testALateAdvanceSaysTheSpanItCovered() {
    var log = LogLimiter(interval: 60)
    _ = log.note(Self.refused, from: "a", at: at(0)) { "x" }
    _ = log.note(Self.refused, from: "a", at: at(1)) { "x" }
    XCTAssertEqual(
      log.advance(to: at(75)), ["refused 1 more connection from a in the last 75 s"])
  }
}
