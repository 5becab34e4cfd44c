import EarshotTestSupport
import XCTest

@testable import EarshotCore

/// SplitMix64: a seeded generator, so a failing sequence can be replayed.
struct SeededRandom: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// A model of the shell and the outside world: carries out the
/// coordinator's actions, confirms them later in a random order interleaved
/// with requests, and checks every invariant as it goes.
struct World {
  let user = VolumeSetting(level: 0.35, muted: true)
  var mixer: VolumeSetting
  var savedOnDisk: VolumeSetting?
  var alertPlaying = false
  var stopPending = false
  var savePending = false
  var restorePending = false
  var raised = false
  var restoreFailures = 0
  var timer: MonotonicTime?
  var pendingNotices: [NoticeID] = []
  /// Requests a device made and has not withdrawn, tracked independently.
  var open: Set<DeviceID> = []
  /// Open requests that asked for a mild alert.
  var mild: Set<DeviceID> = []
  /// A found was answered and no start request came since.
  var foundBlocksAlert = false
  var expected: [DeviceID: Int] = [:]
  var sent: [DeviceID: Int] = [:]
  /// What happened, rendered only when an assertion fails.
  enum Entry {
    case event(FindEvent)
    case reply(FindReply)
    case action(FindAction)
  }
  var log: [Entry] = []

  init() { mixer = user }

  mutating func perform(_ actions: [FindAction], headphones: Bool) {
    for a in actions {
      log.append(.action(a))
      switch a {
      case .saveUserVolume:
        XCTAssertFalse(savePending, "one save at a time\n\(trace)")
        savePending = true
      case .raiseVolume(let level):
        XCTAssertNotNil(savedOnDisk, "raised before the user's volume was persisted\n\(trace)")
        XCTAssertLessThanOrEqual(level, 0.9, "louder than the find-phone level\n\(trace)")
        if !open.isEmpty, open.isSubset(of: mild), let savedOnDisk {
          XCTAssertLessThanOrEqual(
            level, savedOnDisk.level, "a mild ring above the user's level\n\(trace)")
        }
        raised = true
        mixer = VolumeSetting(level: level, muted: false)
      case .startAlert:
        XCTAssertFalse(alertPlaying, "a second alert stacked\n\(trace)")
        XCTAssertFalse(foundBlocksAlert, "startAlert after found\n\(trace)")
        XCTAssertFalse(open.isEmpty, "startAlert with no open request\n\(trace)")
        alertPlaying = true
      case .stopAlert:
        XCTAssertTrue(alertPlaying, "stopAlert while silent\n\(trace)")
        alertPlaying = false
        stopPending = true
      case .restoreVolume(let v):
        XCTAssertFalse(alertPlaying || stopPending, "restored before silence\n\(trace)")
        XCTAssertEqual(v, savedOnDisk, "restores what was saved\n\(trace)")
        restorePending = true
      case .forgetSavedVolume:
        XCTAssertFalse(restorePending, "forgot before the restore finished\n\(trace)")
        XCTAssertEqual(mixer, savedOnDisk, "forgot a volume the mixer does not hold\n\(trace)")
        savedOnDisk = nil
      case .sendNotice(let id, let d):
        XCTAssertFalse(alertPlaying || stopPending, "notice while the alert plays\n\(trace)")
        XCTAssertFalse(raised || restorePending, "notice before the volume is restored\n\(trace)")
        sent[d, default: 0] += 1
        XCTAssertLessThanOrEqual(sent[d]!, expected[d] ?? 0, "more notices than founds\n\(trace)")
        pendingNotices.append(id)
      case .reportNoticeResult(let id, _, _):
        pendingNotices.removeAll { $0 == id }
      case .timer(.arm(_, let deadline)): timer = deadline
      case .timer(.cancel): timer = nil
      case .log, .statusChanged: break
      }
    }
  }

  var trace: String {
    log.suffix(40).map {
      switch $0 {
      case .event(let e): return "\(e)"
      case .reply(let r): return "  reply \(r)"
      case .action(let a): return "  -> \(a)"
      }
    }.joined(separator: "\n")
  }
}

final class FindPhonePropertyTests: XCTestCase {
  let devices = [deviceA, deviceB, deviceC]

  /// How often the interesting situations came up (the generator must reach them).
  var seen: [String: Int] = [:]

  func testInvariantsHoldOverRandomEventSequences() {
    for seed in UInt64(1)...1500 {
      run(seed: seed, steps: 150)
      if testRun?.failureCount ?? 0 > 0 {
        XCTFail("first failing seed: \(seed)")
        return
      }
    }
    for situation in [
      "joined", "queued", "withdrawn", "notice", "timeout", "restore failed", "two notices", "mild",
    ] {
      XCTAssertGreaterThan(
        seen[situation] ?? 0, 10, "the random sequences rarely reach '\(situation)'")
    }
  }

  private func run(seed: UInt64, steps: Int) {
    var rng = SeededRandom(state: seed)
    let settings = FindPhoneConfig(volume: 0.9, headphoneVolume: 0.9, timeout: 60)
    var c = FindPhoneCoordinator(settings: settings)
    var w = World()
    var now = MonotonicTime.zero + .seconds(5)
    let headphones = false
    if Bool.random(using: &rng) {
      // A crash left the user's volume saved and the mixer raised.
      w.savedOnDisk = w.user
      w.mixer = VolumeSetting(level: 0.9, muted: false)
      w.raised = true
      feed(.recover(w.user), &c, &w, now)
    }

    for _ in 0..<steps {
      switch Int.random(in: 0..<13, using: &rng) {
      case 0, 1:
        let d = devices.randomElement(using: &rng)!
        let isMild = Int.random(in: 0..<3, using: &rng) == 0
        if isMild, !w.open.contains(d) { w.mild.insert(d) }
        if !isMild { w.mild.remove(d) }
        w.open.insert(d)
        w.foundBlocksAlert = false
        feed(isMild ? .deviceStartMild(d) : .deviceStart(d), &c, &w, now)
      case 2:
        let d = devices.randomElement(using: &rng)!
        let had = w.open.remove(d) != nil
        w.mild.remove(d)
        let reply = feed(.deviceStop(d), &c, &w, now)
        if had {
          XCTAssertTrue(reply == .stopped || reply == .withdrawn, "\(reply!)\n\(w.trace)")
        } else {
          XCTAssertEqual(reply, .notRequested, w.trace)
        }
      case 3:
        let reply = feed(.found, &c, &w, now)
        if case .stopping(let list) = reply {
          XCTAssertEqual(Set(list), w.open, "every open request is answered\n\(w.trace)")
          XCTAssertEqual(list.count, Set(list).count)
          for d in list { w.expected[d, default: 0] += 1 }
          w.open = []
          w.mild = []
          w.foundBlocksAlert = true
        } else {
          XCTAssertTrue(w.open.isEmpty, "found ignored open requests\n\(w.trace)")
        }
      case 4:
        now += second * Int.random(in: 0...40, using: &rng)
        if let t = w.timer, now >= t {
          w.timer = nil
          feed(.timerFired, &c, &w, now)
          XCTAssertFalse(w.alertPlaying, "rang past the timeout\n\(w.trace)")
          endedWithoutNotice(c, &w)
        }
      case 5, 6:
        if w.savePending {
          w.savePending = false
          if Int.random(in: 0..<8, using: &rng) == 0 {
            feed(.volumeSaveFailed("disk full"), &c, &w, now)
          } else {
            w.savedOnDisk = w.mixer
            feed(.volumeSaved(w.mixer, headphones: headphones), &c, &w, now)
          }
        }
      case 7:
        if w.stopPending {
          w.stopPending = false
          feed(.alertStopped, &c, &w, now)
        }
      case 8:
        if w.restorePending {
          w.restorePending = false
          if Int.random(in: 0..<8, using: &rng) == 0 {
            w.restoreFailures += 1
            w.raised = false  // the attempt is over; the mixer stays as it was
            feed(.volumeRestoreFailed("mixer gone"), &c, &w, now)
          } else {
            w.mixer = w.savedOnDisk!
            w.raised = false
            feed(.volumeRestored, &c, &w, now)
          }
        }
      case 9:
        if let id = w.pendingNotices.randomElement(using: &rng) {
          let result: NoticeResult = Bool.random(using: &rng) ? .accepted : .failed("nope")
          XCTAssertEqual(feed(.noticeResult(id, result), &c, &w, now), .noticeRecorded)
        }
      case 10:
        if w.alertPlaying && Int.random(in: 0..<4, using: &rng) == 0 {
          w.alertPlaying = false
          feed(.alertFailed("underrun"), &c, &w, now)
          endedWithoutNotice(c, &w)
        }
      case 11:
        feed(.deviceGone(devices.randomElement(using: &rng)!), &c, &w, now)
      default:
        // Stale or unrequested confirmations change nothing harmful.
        let stale: [FindEvent] = [
          .timerFired, .alertStopped, .volumeRestored, .noticeResult(999, .accepted),
        ]
        let e = stale.randomElement(using: &rng)!
        if e == .alertStopped && w.stopPending { break }
        if e == .volumeRestored && w.restorePending { break }
        if e == .timerFired, let t = w.timer, now >= t { break }
        feed(e, &c, &w, now)
      }
      if testRun?.failureCount ?? 0 > 0 { return }
    }

    // Quiesce: withdraw every request, confirm everything, answer notices.
    for d in devices {
      w.open.remove(d)
      w.mild.remove(d)
      feed(.deviceStop(d), &c, &w, now)
    }
    for _ in 0..<10 {
      if w.savePending {
        w.savePending = false
        w.savedOnDisk = w.mixer
        feed(.volumeSaved(w.mixer, headphones: false), &c, &w, now)
      }
      if w.stopPending {
        w.stopPending = false
        feed(.alertStopped, &c, &w, now)
      }
      if w.restorePending {
        w.restorePending = false
        w.mixer = w.savedOnDisk!
        w.raised = false
        feed(.volumeRestored, &c, &w, now)
      }
    }
    for id in w.pendingNotices { feed(.noticeResult(id, .accepted), &c, &w, now) }
    XCTAssertEqual(c.status.state, .idle, w.trace)
    XCTAssertFalse(w.alertPlaying, w.trace)
    XCTAssertEqual(w.sent, w.expected, "exactly one notice per found per requester\n\(w.trace)")
    XCTAssertTrue(c.outstandingNotices.isEmpty)
    if w.restoreFailures == 0 {
      XCTAssertEqual(w.mixer, w.user, "the user's volume is back\n\(w.trace)")
      XCTAssertNil(w.savedOnDisk, w.trace)
    }
  }

  /// After a timeout or failure the requests of that ring are closed.
  private func endedWithoutNotice(_ c: FindPhoneCoordinator, _ w: inout World) {
    let still = Set(c.status.requesters)
    XCTAssertTrue(still.isSubset(of: w.open), w.trace)
    w.open = still
    w.mild.formIntersection(still)
  }

  @discardableResult
  private func feed(
    _ e: FindEvent, _ c: inout FindPhoneCoordinator, _ w: inout World, _ now: MonotonicTime
  ) -> FindReply? {
    w.log.append(.event(e))
    let step = c.handle(e, now: now)
    if let r = step.reply { w.log.append(.reply(r)) }
    switch step.reply {
    case .joined?: seen["joined", default: 0] += 1
    case .queued?: seen["queued", default: 0] += 1
    case .withdrawn?: seen["withdrawn", default: 0] += 1
    case .stopping(let l)? where l.count > 1: seen["two notices", default: 0] += 1
    default: break
    }
    if step.actions.contains(where: {
      if case .sendNotice = $0 { return true } else { return false }
    }) {
      seen["notice", default: 0] += 1
    }
    if e == .timerFired && c.status.lastEnd == .timeout
      && step.actions.contains(.timer(.cancel(.timeout)))
    {
      seen["timeout", default: 0] += 1
    }
    if case .volumeRestoreFailed = e { seen["restore failed", default: 0] += 1 }
    if case .deviceStartMild = e, step.reply == .joined || step.reply == .ringing {
      seen["mild", default: 0] += 1
    }
    if let last = step.actions.last, step.actions.contains(.statusChanged) {
      XCTAssertEqual(last, .statusChanged, "statusChanged comes last")
    }
    w.perform(step.actions, headphones: false)
    return step.reply
  }
}
