import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// The ring / silence / identify machine: each path to its one answer,
/// and (property) over random shell answers: one finish, bounded connects,
/// disconnected at the end.
final class TrackerSoundMachineTests: XCTestCase {
  typealias Phase = TrackerSoundMachine.Phase
  let t0 = MonotonicTime(nanos: 1_000_000_000)
  let dult = TrackerSound.dult
  let airTag = TrackerSound.airTag

  private func keys(_ rows: TrackerSoundRow...) -> Set<String> { Set(rows.map(\.key)) }

  private func finish(_ actions: [TrackerSoundAction]) -> TrackerSoundOutcome? {
    if case .finish(let o)? = actions.last { return o }
    return nil
  }

  func testTheTableHoldsTheProtocolsFacts() {
    XCTAssertEqual(dult.service, "15190001-12f4-c226-88ed-2ac5579f2a85")
    XCTAssertEqual(dult.characteristic, "8e0c0001-1d68-fb92-bf61-48377421680e")
    XCTAssertEqual(dult.start, [0x00, 0x03])
    XCTAssertEqual(dult.stop, [0x01, 0x03])
    XCTAssertTrue(dult.subscribeFirst)
    XCTAssertEqual(airTag.service, "7dfc9000-7d1c-4951-86aa-8d9728f8d66c")
    XCTAssertEqual(airTag.characteristic, "7dfc9001-7d1c-4951-86aa-8d9728f8d66c")
    XCTAssertEqual(airTag.start, [0xAF])
    XCTAssertNil(airTag.stop)
    XCTAssertEqual(TrackerSound.findMyAccessory.service, "0000fd44-0000-1000-8000-00805f9b34fb")
    XCTAssertEqual(
      TrackerSound.findMyAccessory.characteristic, "4f860003-943b-49ef-bed4-2f730304427a")
    XCTAssertEqual(TrackerSound.pebblebee.characteristic, "00002c02-0000-1000-8000-00805f9b34fb")
    XCTAssertEqual(TrackerSound.pebblebee.start, [0x01])
    // Who can be rung at all follows the notification's "Ring it".
    for family in TrackerProtocol.Family.allCases {
      XCTAssertEqual(!TrackerSound.candidates(family).isEmpty, family.ringable, "\(family)")
    }
  }

  func testDULTMessagesParseStrictly() {
    XCTAssertEqual(
      DULT.parse([0x02, 0x03, 0x00, 0x03, 0x01, 0x00]), .response(to: 0x0300, status: 1))
    XCTAssertEqual(DULT.parse([0x03, 0x03]), .soundCompleted)
    XCTAssertEqual(
      DULT.parse([0x04, 0x08, 0x41, 0x43, 0x4D, 0x45, 0, 0]),
      .data(opcode: 0x0804, payload: [0x41, 0x43, 0x4D, 0x45, 0, 0]))
    XCTAssertNil(DULT.parse([0x02]))
    XCTAssertNil(DULT.parse([0x02, 0x03, 0x00]), "a response without its status")
    XCTAssertEqual(DULT.show([0x41, 0x43, 0x4D, 0x45, 0, 0x41], .text), "ACME")
    XCTAssertEqual(DULT.show([2], .battery), "low")
    XCTAssertEqual(DULT.statusName(0xFFFF), "Invalid_command")
  }

  /// Tile, SmartTag and Chipolo: the answer without a connection.
  func testStrangersCannotRingTileSmartTagOrChipolo() {
    for family in [TrackerProtocol.Family.tile, .smartTag, .chipolo] {
      var m = TrackerSoundMachine(family: family, mode: .ring)
      let out = m.handle(.start, now: t0)
      XCTAssertEqual(out.count, 1)
      guard case .strangersCannot(let app)? = finish(out) else {
        return XCTFail("\(family): \(out)")
      }
      XCTAssertTrue(finish(out)!.line("tracker 1").contains("cannot be rung by a stranger"), app)
    }
  }

  /// An AirTag offering DULT: indications on, Sound_Start, Success.
  func testDULTRingSubscribesWritesAndReadsTheAnswer() {
    var m = TrackerSoundMachine(family: .findMy, mode: .ring)
    XCTAssertEqual(m.handle(.start, now: t0).last, .connect)
    var out = m.handle(.connected(keys(dult, airTag)), now: t0)
    XCTAssertEqual(out.last, .subscribe(dult))
    out = m.handle(.subscribed(error: nil), now: t0)
    XCTAssertEqual(out.last, .write(dult, [0x00, 0x03]))
    out = m.handle(.written(error: nil), now: t0)
    XCTAssertNil(finish(out), "waits for the DULT answer")
    XCTAssertEqual(m.phase, .answering)
    out = m.handle(.value([0x03, 0x03]), now: t0)
    XCTAssertTrue(out.isEmpty, "Sound_Completed is not the answer")
    out = m.handle(.value([0x02, 0x03, 0x00, 0x03, 0x00, 0x00]), now: t0)
    XCTAssertEqual(
      Array(out.suffix(2)), [.disconnect, .finish(.rang(via: "DULT", confirmed: true))])
    XCTAssertTrue(m.handle(.value([1]), now: t0).isEmpty, "nothing after the finish")
  }

  func testInvalidStateIsNearItsOwner() {
    var m = TrackerSoundMachine(family: .findHub, mode: .ring)
    _ = m.handle(.start, now: t0)
    _ = m.handle(.connected(keys(dult)), now: t0)
    _ = m.handle(.subscribed(error: nil), now: t0)
    // The indication may come before the write's acknowledgement.
    XCTAssertTrue(m.handle(.value([0x02, 0x03, 0x00, 0x03, 0x01, 0x00]), now: t0).isEmpty)
    let out = m.handle(.written(error: nil), now: t0)
    XCTAssertEqual(finish(out), .nearOwner(via: "DULT"))
    XCTAssertTrue(finish(out)!.line("tracker 2").contains("is near its owner"))
    XCTAssertEqual(out.filter { $0 == .disconnect }.count, 1)
  }

  /// DULT refuses: the AirTag's own service is tried on the same link.
  func testARefusalMovesToTheNextWayIn() {
    var m = TrackerSoundMachine(family: .findMy, mode: .ring)
    _ = m.handle(.start, now: t0)
    _ = m.handle(.connected(keys(dult, airTag)), now: t0)
    _ = m.handle(.subscribed(error: nil), now: t0)
    var out = m.handle(.written(error: "NotPermitted"), now: t0)
    XCTAssertTrue(out.contains(.write(airTag, [0xAF])), "\(out)")
    out = m.handle(.written(error: nil), now: t0)
    XCTAssertEqual(finish(out), .rang(via: "AirTag", confirmed: true))
    XCTAssertEqual(m.attempts, 1)
  }

  func testEveryWayInRefusingIsRefused() {
    var m = TrackerSoundMachine(family: .findMy, mode: .ring)
    _ = m.handle(.start, now: t0)
    _ = m.handle(.connected(keys(airTag)), now: t0)
    let out = m.handle(.written(error: "NotPermitted"), now: t0)
    XCTAssertEqual(finish(out), .refused(via: "AirTag", "NotPermitted"))
  }

  func testSilenceUsesStopAndAnAirTagCannotBeSilenced() {
    var m = TrackerSoundMachine(family: .findMy, mode: .silence)
    _ = m.handle(.start, now: t0)
    _ = m.handle(.connected(keys(dult, airTag)), now: t0)
    XCTAssertEqual(m.handle(.subscribed(error: nil), now: t0).last, .write(dult, [0x01, 0x03]))
    _ = m.handle(.written(error: nil), now: t0)
    let out = m.handle(.value([0x02, 0x03, 0x01, 0x03, 0x00, 0x00]), now: t0)
    XCTAssertEqual(finish(out), .silenced(via: "DULT"))

    var a = TrackerSoundMachine(family: .findMy, mode: .silence)
    _ = a.handle(.start, now: t0)
    let only = a.handle(.connected(keys(airTag)), now: t0)
    guard case .noWayIn(let why)? = finish(only) else { return XCTFail("\(only)") }
    XCTAssertTrue(why.contains("stops by itself"), why)
    XCTAssertEqual(only.first, .disconnect)
  }

  func testIdentifyAsksEachQueryAndCollectsTheAnswers() {
    var m = TrackerSoundMachine(family: .dult, mode: .identify)
    _ = m.handle(.start, now: t0)
    _ = m.handle(.connected(keys(dult)), now: t0)
    var out = m.handle(.subscribed(error: nil), now: t0)
    var answers = 0
    while case .write(_, let bytes)? = out.first(where: {
      if case .write = $0 { true } else { false }
    }) {
      _ = m.handle(.written(error: nil), now: t0)
      let op = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
      let reply: [UInt8]
      switch op {
      case 0x0004: reply = [0x04, 0x08] + Array("Acme".utf8) + [0]
      case 0x0005: reply = [0x05, 0x08] + Array("Tag One".utf8)
      // Get_Identifier outside its window: Invalid_state.
      case DULT.getIdentifier: reply = [0x02, 0x03, 0x04, 0x04, 0x01, 0x00]
      default: reply = [0x02, 0x03] + DULT.command(op) + [0xFF, 0xFF]
      }
      out = m.handle(.value(reply), now: t0)
      answers += 1
      XCTAssertLessThanOrEqual(answers, DULT.queries.count)
    }
    XCTAssertEqual(answers, DULT.queries.count)
    guard case .identified(let via, let facts)? = finish(out) else { return XCTFail("\(out)") }
    XCTAssertEqual(via, "DULT")
    XCTAssertTrue(facts.contains(TrackerFact(name: "manufacturer", value: "Acme")))
    XCTAssertTrue(facts.contains(TrackerFact(name: "model", value: "Tag One")))
    XCTAssertTrue(
      facts.contains(TrackerFact(name: "identifier", value: "not given (Invalid_state)")))
  }

  func testIdentifyWithoutDULTSaysSo() {
    var m = TrackerSoundMachine(family: .findMy, mode: .identify)
    _ = m.handle(.start, now: t0)
    let out = m.handle(.connected(keys(airTag)), now: t0)
    guard case .noWayIn(let why)? = finish(out) else { return XCTFail("\(out)") }
    XCTAssertTrue(why.contains("does not speak DULT"), why)
  }

  /// Never heard: scans, retries after 3 then 6 s, then "out of range".
  func testNotFoundIsOutOfRangeAfterTheAttempts() {
    var m = TrackerSoundMachine(family: .findMy, mode: .ring)
    var now = t0
    var out = m.handle(.start, now: now)
    for attempt in 1...3 {
      XCTAssertEqual(out.last, .connect, "attempt \(attempt)")
      out = m.handle(.connectFailed("not heard", seen: false), now: now)
      XCTAssertEqual(out.first, .disconnect)
      if attempt < 3 {
        guard case .armTimer(let at)? = out.last else { return XCTFail("\(out)") }
        XCTAssertEqual(now.seconds(until: at), 3 * Double(attempt), accuracy: 1e-9)
        XCTAssertTrue(m.handle(.timerFired, now: now).isEmpty, "an early firing is ignored")
        now = at
        out = m.handle(.timerFired, now: now)
      }
    }
    XCTAssertEqual(finish(out), .outOfRange(attempts: 3))
    XCTAssertTrue(finish(out)!.line("tracker 1").contains("out of range (3 tries)"))
  }

  func testAHungStepTimesOutAndFailsAfterTheAttempts() {
    var m = TrackerSoundMachine(family: .findHub, mode: .ring)
    var now = t0
    var out = m.handle(.start, now: now)
    var connects = 0
    for _ in 0..<50 {
      if out.contains(.connect) {
        connects += 1
        out = m.handle(.connected(keys(dult)), now: now)
      }
      if case .finish? = out.last { break }
      // The tag never answers the subscription: only the deadline moves on.
      guard let at = m.deadline else { return XCTFail("no deadline in \(m.phase)") }
      now = at
      out = m.handle(.timerFired, now: now)
    }
    XCTAssertEqual(connects, 3)
    guard case .failed(3, let why)? = finish(out) else { return XCTFail("\(out)") }
    XCTAssertTrue(why.contains("did not answer the subscription within 5 s"), why)
  }

  func testAcknowledgedButUnansweredIsAnUnconfirmedRing() {
    var m = TrackerSoundMachine(family: .findHub, mode: .ring)
    _ = m.handle(.start, now: t0)
    _ = m.handle(.connected(keys(dult)), now: t0)
    _ = m.handle(.subscribed(error: nil), now: t0)
    _ = m.handle(.written(error: nil), now: t0)
    let out = m.handle(.timerFired, now: m.deadline!)
    XCTAssertEqual(finish(out), .rang(via: "DULT", confirmed: false))
  }

  func testNoSoundServiceIsSaid() {
    var m = TrackerSoundMachine(family: .pebblebee, mode: .ring)
    _ = m.handle(.start, now: t0)
    let out = m.handle(.connected([]), now: t0)
    guard case .noWayIn(let why)? = finish(out) else { return XCTFail("\(out)") }
    XCTAssertTrue(why.contains("Pebblebee, DULT"), why)
  }

  // MARK: Property

  /// Random shell answers (right or wrong for the phase, early or late
  /// timers): one finish, last; at most `attempts` connects; a disconnect
  /// after the last connect before the finish; and a shell that only ever
  /// lets the deadline pass still gets an answer.
  func testGuaranteesHoldOverRandomAnswers() {
    var outcomes: [String: Int] = [:]
    for seed in UInt64(1)...2000 {
      var rng = SeededRandom(state: seed)
      let family = TrackerProtocol.Family.allCases.randomElement(using: &rng)!
      let mode = TrackerSoundMode.allCases.randomElement(using: &rng)!
      let settings = TrackerSoundMachine.Settings(attempts: Int.random(in: 1...4, using: &rng))
      var m = TrackerSoundMachine(family: family, mode: mode, settings: settings)
      var now = t0
      var all = m.handle(.start, now: now)
      var steps = 0
      while !all.contains(where: { if case .finish = $0 { true } else { false } }) {
        steps += 1
        guard steps < 500 else { return XCTFail("seed \(seed): no answer after 500 inputs") }
        let rows = TrackerSound.table.filter { _ in Bool.random(using: &rng) }
        // The answer to the last write, right or wrong.
        let sent =
          all.reversed().lazy.compactMap { a -> [UInt8]? in
            if case .write(_, let b) = a, b.count >= 2 { Array(b.suffix(2)) } else { nil }
          }.first ?? [0, 0]
        let op = UInt16(sent[0]) | UInt16(sent[1]) << 8
        let answerOp = op == DULT.getIdentifier ? DULT.identifierResponse : op + 0x800
        let value: [UInt8] = [
          [0x02, 0x03] + sent + [UInt8.random(in: 0...2, using: &rng), 0x00],
          DULT.command(answerOp) + [0x41], [0x03, 0x03], [0x02], [],
        ].randomElement(using: &rng)!
        let right: [Phase: TrackerSoundInput] = [
          .connecting: .connected(Set(rows.map(\.key))),
          .subscribing: .subscribed(error: nil), .writing: .written(error: nil),
          .answering: .value(value),
        ]
        let inputs: [TrackerSoundInput] = [
          .connected(Set(rows.map(\.key))), .connectFailed("x", seen: Bool.random(using: &rng)),
          .subscribed(error: Bool.random(using: &rng) ? nil : "e"),
          .written(error: Bool.random(using: &rng) ? nil : "e"), .value(value),
          .disconnected("d"), .timerFired,
        ]
        var input = inputs.randomElement(using: &rng)!
        if let good = right[m.phase], Int.random(in: 0..<10, using: &rng) < 7 { input = good }
        if case .timerFired = input, let at = m.deadline, Bool.random(using: &rng) { now = at }
        if steps > 200, let at = m.deadline {
          // A silent shell: only the deadlines.
          now = at
          input = .timerFired
        }
        all += m.handle(input, now: now)
      }
      let finishes = all.indices.filter { if case .finish = all[$0] { true } else { false } }
      XCTAssertEqual(finishes, [all.count - 1], "seed \(seed): one finish, last")
      let connects = all.indices.filter { all[$0] == .connect }
      XCTAssertLessThanOrEqual(connects.count, settings.attempts, "seed \(seed)")
      if let last = connects.last {
        XCTAssertTrue(all[last...].contains(.disconnect), "seed \(seed): left connected")
      }
      for (i, c) in connects.enumerated() where i > 0 {
        XCTAssertTrue(all[connects[i - 1]..<c].contains(.disconnect), "seed \(seed)")
      }
      XCTAssertTrue(m.handle(.timerFired, now: now.adding(seconds: 1e6)).isEmpty)
      if case .finish(let o)? = all.last { outcomes[o.code, default: 0] += 1 }
    }
    for code in [
      "rang", "silenced", "identified", "near_owner", "refused", "out_of_range", "failed",
      "strangers_cannot_ring", "no_sound_service",
    ] {
      XCTAssertGreaterThan(outcomes[code] ?? 0, 5, "random answers rarely reach \(code)")
    }
  }
}
