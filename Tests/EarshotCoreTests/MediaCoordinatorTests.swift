import EarshotCore
import EarshotTestSupport
import XCTest

final class MediaCoordinatorTests: XCTestCase {
  let song = MediaItem(path: "/m/Song.flac", title: "Song", artist: nil, decodable: true)
  let other = MediaItem(path: "/m/Other.wav", title: "Other", artist: nil, decodable: true)
  let aac = MediaItem(path: "/m/Tune.m4a", title: "Tune", artist: nil, decodable: false)

  func coordinator(mpris: Bool = false) -> MediaCoordinator {
    MediaCoordinator(
      library: MediaLibrary([song, other, aac]), timeout: 5, playerDecodesAnything: mpris)
  }

  func testResponseWireValues() {
    XCTAssertEqual(MediaResponse.allCases.map(\.rawValue), Array(0...6))
    XCTAssertEqual(
      MediaResponse.allCases.map(\.name),
      [
        "success", "notFound", "unsupportedMediaType", "playerNotRunning", "busy", "timeout",
        "failure",
      ])
  }

  func testSuccessWhenFirstAudioIsWritten() {
    var c = coordinator()
    let (id, a) = c.request(title: "song", now: 100)
    XCTAssertEqual(a, [.startPlayback(id, song), .armTimeout(id, at: 105)])
    XCTAssertEqual(c.pending, id)
    XCTAssertEqual(
      c.handle(.playbackStarted(id), now: 100.1),
      [.cancelTimeout(id), .complete(id, .success, item: song)])
    XCTAssertEqual(c.phase, .playing(id, song))
    XCTAssertNil(c.pending)
    // Repeated start reports are not second completions.
    XCTAssertEqual(c.handle(.playbackStarted(id), now: 100.2).filter(isCompletion), [])
    XCTAssertEqual(c.handle(.playbackEnded(id), now: 130), [])
    XCTAssertEqual(c.phase, .idle)
  }

  func testNotFoundAndUnsupported() {
    var c = coordinator()
    let (id, a) = c.request(title: "nothing like it", now: 0)
    XCTAssertEqual(a.last, .complete(id, .notFound, item: nil))
    let (id2, b) = c.request(title: "tune", now: 0)
    XCTAssertEqual(b.last, .complete(id2, .unsupportedMediaType, item: aac))
    XCTAssertNotEqual(id, id2)
    XCTAssertEqual(c.phase, .idle)
    // An MPRIS player decodes it.
    var m = coordinator(mpris: true)
    let (id3, d) = m.request(title: "tune", now: 0)
    XCTAssertEqual(d.first, .startPlayback(id3, aac))
  }

  func testFailureCodesFromThePlayerAreTheCompletion() {
    for code in [MediaResponse.playerNotRunning, .busy, .unsupportedMediaType, .failure] {
      var c = coordinator()
      let (id, _) = c.request(title: "song", now: 0)
      XCTAssertEqual(
        c.handle(.playbackFailed(id, code, "why"), now: 1),
        [.cancelTimeout(id), .log("request \(id): why"), .complete(id, code, item: song)])
      XCTAssertEqual(c.phase, .idle)
    }
  }

  func testTimeoutThenLateResultIsDropped() {
    var c = coordinator()
    let (id, _) = c.request(title: "song", now: 0)
    let t = c.handle(.timeoutReached(id), now: 5)
    XCTAssertEqual(t.filter(isCompletion), [.complete(id, .timeout, item: song)])
    XCTAssertTrue(t.contains(.stopPlayback(id)))
    XCTAssertEqual(c.handle(.playbackStarted(id), now: 6).filter(isCompletion), [])
    XCTAssertEqual(c.handle(.playbackFailed(id, .failure, "x"), now: 6).filter(isCompletion), [])
    XCTAssertEqual(c.handle(.timeoutReached(id), now: 7), [])
    XCTAssertEqual(c.phase, .idle)
  }

  func testSecondRequestWhilePendingGetsItsOwnBusyCompletion() {
    var c = coordinator()
    let (first, _) = c.request(title: "song", now: 0)
    let (second, a) = c.request(title: "other", now: 1)
    XCTAssertEqual(a.filter(isCompletion), [.complete(second, .busy, item: other)])
    XCTAssertEqual(c.pending, first)
    let (third, b) = c.request(title: "no such thing", now: 1)
    XCTAssertEqual(b.filter(isCompletion), [.complete(third, .notFound, item: nil)])
    XCTAssertEqual(
      c.handle(.playbackStarted(first), now: 2).filter(isCompletion),
      [.complete(first, .success, item: song)])
  }

  func testNewRequestReplacesWhatPlays() {
    var c = coordinator()
    let (first, _) = c.request(title: "song", now: 0)
    _ = c.handle(.playbackStarted(first), now: 1)
    let (second, a) = c.request(title: "other", now: 2)
    XCTAssertEqual(
      a, [.stopPlayback(first), .startPlayback(second, other), .armTimeout(second, at: 7)])
    // The first's end report after the switch changes nothing.
    XCTAssertEqual(c.handle(.playbackEnded(first), now: 2.1), [])
    XCTAssertEqual(c.pending, second)
  }

  func testFindPhonePausesRingsAndResumes() {
    var c = coordinator()
    let (id, _) = c.request(title: "song", now: 0)
    _ = c.handle(.playbackStarted(id), now: 1)
    XCTAssertEqual(c.handle(.findPhoneStarted, now: 2), [.pausePlayback(id)])
    let (r, a) = c.request(title: "other", now: 3)
    XCTAssertEqual(a.filter(isCompletion), [.complete(r, .busy, item: other)])
    XCTAssertEqual(c.handle(.findPhoneEnded, now: 4), [.resumePlayback(id)])
    XCTAssertEqual(c.phase, .playing(id, song))
    XCTAssertEqual(c.handle(.findPhoneEnded, now: 5), [])
  }

  func testUserPauseDuringRingKeepsItPaused() {
    var c = coordinator()
    let (id, _) = c.request(title: "song", now: 0)
    _ = c.handle(.playbackStarted(id), now: 1)
    _ = c.handle(.findPhoneStarted, now: 2)
    XCTAssertEqual(c.handle(.userPause, now: 3), [])
    XCTAssertEqual(c.handle(.findPhoneEnded, now: 4), [])
    XCTAssertEqual(c.phase, .paused(id, song, byRing: false))
    XCTAssertEqual(c.handle(.userResume, now: 5), [.resumePlayback(id)])
  }

  func testUserResumeDuringRingWaitsForTheRing() {
    var c = coordinator()
    let (id, _) = c.request(title: "song", now: 0)
    _ = c.handle(.playbackStarted(id), now: 1)
    _ = c.handle(.userPause, now: 2)
    _ = c.handle(.findPhoneStarted, now: 3)
    XCTAssertEqual(c.handle(.userResume, now: 4), [])
    XCTAssertEqual(c.handle(.findPhoneEnded, now: 5), [.resumePlayback(id)])
  }

  func testRingWhileStartingStopsAndAnswersBusy() {
    var c = coordinator()
    let (id, _) = c.request(title: "song", now: 0)
    let a = c.handle(.findPhoneStarted, now: 1)
    XCTAssertTrue(a.contains(.stopPlayback(id)))
    XCTAssertEqual(a.filter(isCompletion), [.complete(id, .busy, item: song)])
    XCTAssertEqual(c.handle(.playbackStarted(id), now: 2).filter(isCompletion), [])
  }

  func testPauseWhileStartingPausesOnceStarted() {
    var c = coordinator()
    let (id, _) = c.request(title: "song", now: 0)
    XCTAssertEqual(c.handle(.userPause, now: 0.1), [])
    XCTAssertEqual(
      c.handle(.playbackStarted(id), now: 0.2),
      [.cancelTimeout(id), .complete(id, .success, item: song), .pausePlayback(id)])
  }

  func testStop() {
    var c = coordinator()
    let (id, _) = c.request(title: "song", now: 0)
    let a = c.handle(.userStop, now: 1)
    XCTAssertEqual(a.filter(isCompletion), [.complete(id, .failure, item: song)])
    XCTAssertTrue(a.contains(.stopPlayback(id)))
    let (id2, _) = c.request(title: "song", now: 2)
    _ = c.handle(.playbackStarted(id2), now: 3)
    XCTAssertEqual(c.handle(.userStop, now: 4), [.stopPlayback(id2)])
    XCTAssertEqual(c.handle(.userStop, now: 5), [])
    XCTAssertEqual(c.handle(.userPause, now: 5), [])
  }

  func testPlayerDyingMidPlayGoesIdleWithoutACompletion() {
    var c = coordinator()
    let (id, _) = c.request(title: "song", now: 0)
    _ = c.handle(.playbackStarted(id), now: 1)
    XCTAssertEqual(c.handle(.playbackFailed(id, .failure, "xrun"), now: 2).filter(isCompletion), [])
    XCTAssertEqual(c.phase, .idle)
  }

  /// Random interleavings of requests, player results (in any order, late,
  /// duplicated), timeouts, rings and user commands: every request gets
  /// exactly one completion; no action ever concerns an unknown request;
  /// the armed timeouts are cancelled or fired by the time a request
  /// completes; and a timer that fires always finds its request pending or
  /// is ignored.
  func testRandomInterleavingsGiveOneCompletionPerRequest() {
    var rng = ShutterMediaRandom(seed: 7)
    for round in 0..<2000 {
      var c = coordinator()
      var now = 0.0
      var requested: [MediaRequestID] = []
      var completions: [MediaRequestID: Int] = [:]
      var armed: [MediaRequestID: Double] = [:]
      var started: [MediaRequestID] = []  // player attempts, in order
      var stopped: Set<MediaRequestID> = []
      func apply(_ actions: [MediaAction]) {
        for a in actions {
          switch a {
          case .complete(let id, _, _):
            completions[id, default: 0] += 1
            XCTAssertNil(armed[id], "round \(round): completed with its timer still armed")
          case .armTimeout(let id, let at): armed[id] = at
          case .cancelTimeout(let id): armed[id] = nil
          case .startPlayback(let id, _): started.append(id)
          case .stopPlayback(let id): stopped.insert(id)
          case .pausePlayback(let id), .resumePlayback(let id):
            XCTAssertTrue(started.contains(id))
          case .log: break
          }
        }
      }
      for _ in 0..<30 {
        now += Double(rng.next() % 3)
        switch rng.next() % 10 {
        case 0, 1, 2:
          let titles = ["song", "other", "tune", "missing"]
          let (id, a) = c.request(title: titles[Int(rng.next() % 4)], now: now)
          requested.append(id)
          apply(a)
        case 3, 4:
          // The player reports for a random attempt (maybe a stale one).
          guard let id = started.randomElement(using: &rng) else { continue }
          let events: [MediaEvent] = [
            .playbackStarted(id), .playbackFailed(id, .busy, "busy"), .playbackEnded(id),
          ]
          apply(c.handle(events[Int(rng.next() % 3)], now: now))
        case 5:
          // Due timers fire (the shell's timerfd); some fire late.
          for (id, at) in armed where at <= now {
            armed[id] = nil
            apply(c.handle(.timeoutReached(id), now: now))
          }
        case 6:
          apply(c.handle(rng.next() % 2 == 0 ? .findPhoneStarted : .findPhoneEnded, now: now))
        case 7:
          let user: [MediaEvent] = [.userPause, .userResume, .userStop]
          apply(c.handle(user[Int(rng.next() % 3)], now: now))
        default:
          // A timer for a request that is long gone fires again.
          if let id = requested.filter({ armed[$0] == nil }).randomElement(using: &rng) {
            apply(c.handle(.timeoutReached(id), now: now))
          }
        }
      }
      // Let everything still pending run out.
      now += 10
      for (id, _) in armed {
        armed[id] = nil
        apply(c.handle(.timeoutReached(id), now: now))
      }
      for id in requested {
        XCTAssertEqual(completions[id], 1, "round \(round): request \(id)")
      }
      XCTAssertEqual(completions.count, requested.count)
      XCTAssertNil(c.pending)
    }
  }

  private func isCompletion(_ a: MediaAction) -> Bool {
    if case .complete = a { return true }
    return false
  }
}
