import EarshotCore
import EarshotTestSupport
import XCTest

final class RemoteShutterTests: XCTestCase {
  private func dev(_ raw: Int) -> ShutterInput { .device(ShutterEventValue(raw: raw)) }

  func testWireNumbers() {
    XCTAssertEqual(ShutterCommand.enter.rawValue, 1)
    XCTAssertEqual(ShutterCommand.capture.rawValue, 2)
    XCTAssertEqual(ShutterCommand.exit.rawValue, 0)
    XCTAssertEqual(ShutterState.enteredPhotoMode.rawValue, 1)
    XCTAssertEqual(ShutterState.exitedOrUnableToEnter.rawValue, 0)
    XCTAssertEqual(ShutterState.photoSuccess.rawValue, 2)
    XCTAssertEqual(ShutterState.photoFailed.rawValue, 3)
    XCTAssertEqual(ShutterEventValue(raw: -1), .unknown(-1))
    XCTAssertEqual(ShutterEventValue(raw: 3), .unknown(3))
    XCTAssertEqual(ShutterEventValue(raw: 2), .command(.capture))
    XCTAssertEqual(ShutterCommand(text: "Enter"), .enter)
    XCTAssertEqual(ShutterCommand(text: "2"), .capture)
    XCTAssertNil(ShutterCommand(text: "-1"))
    XCTAssertNil(ShutterCommand(text: "snap"))
  }

  func testEnterCaptureExit() {
    var s = RemoteShutter()
    XCTAssertEqual(s.handle(dev(1)), [.openCamera])
    XCTAssertEqual(s.phase, .opening)
    XCTAssertEqual(s.handle(.cameraReady), [.reply(.enteredPhotoMode)])
    XCTAssertTrue(s.inPhotoMode)
    XCTAssertEqual(s.handle(dev(2)), [.capture])
    XCTAssertEqual(s.handle(.photoTaken("/p/1.jpg")), [.reply(.photoSuccess)])
    XCTAssertEqual(s.handle(dev(2)), [.capture])
    XCTAssertEqual(s.handle(.photoTaken("/p/2.jpg")), [.reply(.photoSuccess)])
    XCTAssertEqual(s.handle(dev(0)), [.releaseCamera, .reply(.exitedOrUnableToEnter)])
    XCTAssertEqual(s.phase, .idle)
  }

  func testCaptureOutsidePhotoModeCapturesNothing() {
    var s = RemoteShutter()
    XCTAssertEqual(s.handle(dev(2)), [.reply(.photoFailed)])
    XCTAssertEqual(s.phase, .idle)
    // And after leaving photo mode again.
    _ = s.handle(dev(1))
    _ = s.handle(.cameraReady)
    _ = s.handle(dev(0))
    XCTAssertEqual(s.handle(dev(2)), [.reply(.photoFailed)])
  }

  func testCameraMissingOrBusyCannotEnter() {
    for failure in [
      CameraFailure.missing("camera /dev/video0 does not exist"),
      .busy("camera /dev/video0 is busy"), .other("not a capture device"),
    ] {
      var s = RemoteShutter()
      _ = s.handle(dev(1))
      XCTAssertEqual(
        s.handle(.cameraFailedToOpen(failure)),
        [.log(failure.message), .reply(.exitedOrUnableToEnter)])
      XCTAssertEqual(s.phase, .idle)
      XCTAssertEqual(s.handle(dev(2)), [.reply(.photoFailed)])
    }
  }

  func testCaptureFailureKeepsPhotoModeUnlessCameraLost() {
    var s = RemoteShutter()
    _ = s.handle(dev(1))
    _ = s.handle(.cameraReady)
    _ = s.handle(dev(2))
    XCTAssertEqual(
      s.handle(.photoFailed(.other("no frame in 5 s"), cameraLost: false)),
      [.log("no frame in 5 s"), .reply(.photoFailed)])
    XCTAssertEqual(s.phase, .photoMode)
    _ = s.handle(dev(2))
    XCTAssertEqual(
      s.handle(.photoFailed(.missing("unplugged"), cameraLost: true)),
      [.log("unplugged"), .releaseCamera, .reply(.photoFailed)])
    XCTAssertEqual(s.phase, .idle)
    XCTAssertEqual(s.handle(dev(2)), [.reply(.photoFailed)])
  }

  func testUnknownEventsChangeNothing() {
    for phase in 0..<2 {
      var s = RemoteShutter()
      if phase == 1 {
        _ = s.handle(dev(1))
        _ = s.handle(.cameraReady)
      }
      let before = s.phase
      XCTAssertEqual(s.handle(dev(-1)), [.replyError(unknownValue: -1)])
      XCTAssertEqual(s.handle(dev(7)), [.replyError(unknownValue: 7)])
      XCTAssertEqual(s.phase, before)
    }
  }

  func testEnterTwiceAndExitTwiceAreIdempotent() {
    var s = RemoteShutter()
    _ = s.handle(dev(1))
    _ = s.handle(.cameraReady)
    XCTAssertEqual(s.handle(dev(1)), [.reply(.enteredPhotoMode)])
    XCTAssertEqual(s.handle(dev(0)), [.releaseCamera, .reply(.exitedOrUnableToEnter)])
    XCTAssertEqual(s.handle(dev(0)), [.reply(.exitedOrUnableToEnter)])
  }

  func testEventsDuringCameraWorkWaitAndAreAnsweredInOrder() {
    var s = RemoteShutter()
    XCTAssertEqual(s.handle(dev(1)), [.openCamera])
    XCTAssertEqual(s.handle(dev(2)), [])
    XCTAssertEqual(s.handle(dev(-1)), [])
    XCTAssertEqual(s.handle(dev(0)), [])
    XCTAssertEqual(s.waiting.count, 3)
    // Ready: answer enter, then start the capture; the rest waits on it.
    XCTAssertEqual(s.handle(.cameraReady), [.reply(.enteredPhotoMode), .capture])
    XCTAssertEqual(
      s.handle(.photoTaken("/p.jpg")),
      [
        .reply(.photoSuccess), .replyError(unknownValue: -1), .releaseCamera,
        .reply(.exitedOrUnableToEnter),
      ])
    XCTAssertEqual(s.phase, .idle)
    XCTAssertTrue(s.waiting.isEmpty)
  }

  func testWaitingEventsAfterFailedOpenSeeIdle() {
    var s = RemoteShutter()
    _ = s.handle(dev(1))
    _ = s.handle(dev(2))
    XCTAssertEqual(
      s.handle(.cameraFailedToOpen(.busy("busy"))),
      [.log("busy"), .reply(.exitedOrUnableToEnter), .reply(.photoFailed)])
  }

  func testQueueIsBounded() {
    var s = RemoteShutter(maxWaiting: 2)
    _ = s.handle(dev(1))
    XCTAssertEqual(s.handle(dev(2)), [])
    XCTAssertEqual(s.handle(dev(2)), [])
    let refused = s.handle(dev(2))
    XCTAssertEqual(refused.last, .reply(.photoFailed))
    XCTAssertEqual(s.handle(dev(9)).last, .replyError(unknownValue: 9))
    XCTAssertEqual(s.waiting.count, 2)
  }

  func testStrayCameraResultsAreIgnoredOrReleased() {
    var s = RemoteShutter()
    XCTAssertEqual(s.handle(.cameraReady), [.releaseCamera])
    XCTAssertEqual(s.handle(.cameraFailedToOpen(.missing("x"))), [])
    XCTAssertEqual(s.handle(.photoTaken("x")), [])
    XCTAssertEqual(s.handle(.photoFailed(.other("x"), cameraLost: true)), [])
    XCTAssertEqual(s.phase, .idle)
  }

  /// Random event sequences: every device event gets exactly one answer,
  /// captures happen only in photo mode, the camera is opened and released
  /// in turn, and answers come in event order.
  func testRandomSequencesAnswerEveryEventOnce() {
    var rng = ShutterMediaRandom(seed: 42)
    for _ in 0..<500 {
      var s = RemoteShutter(maxWaiting: 4)
      var sent = 0
      var answers = 0
      var cameraOpen = false
      var pendingCamera: ShutterAction? = nil
      for _ in 0..<40 {
        var actions: [ShutterAction]
        if let p = pendingCamera, rng.next() % 3 == 0 {
          pendingCamera = nil
          let ok = rng.next() % 4 != 0
          if p == .openCamera {
            actions = s.handle(ok ? .cameraReady : .cameraFailedToOpen(.busy("busy")))
            if ok { cameraOpen = true }
          } else {
            actions = s.handle(
              ok ? .photoTaken("f") : .photoFailed(.other("x"), cameraLost: rng.next() % 2 == 0))
          }
        } else {
          sent += 1
          actions = s.handle(dev(Int(rng.next() % 5) - 1))
        }
        for a in actions {
          switch a {
          case .reply, .replyError: answers += 1
          case .openCamera:
            XCTAssertFalse(cameraOpen)
            XCTAssertNil(pendingCamera)
            pendingCamera = a
          case .capture:
            XCTAssertTrue(cameraOpen)
            XCTAssertNil(pendingCamera)
            pendingCamera = a
          case .releaseCamera:
            XCTAssertTrue(cameraOpen)
            cameraOpen = false
          case .log: break
          }
        }
        XCTAssertEqual(answers + s.waiting.count + (pendingCamera == nil ? 0 : 1), sent)
      }
    }
  }
}

/// A small deterministic generator for randomized tests.
struct ShutterMediaRandom: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

final class ShutterConfigTests: XCTestCase {
  func testSettings() throws {
    let s = try ShutterConfig(values: [
      ("device", "/dev/video2"), ("directory", "~/Photos"),
      ("capture_command", "snap --out %f --q 9"),
      ("resolution", "1280x720"), ("warmup_frames", "0"), ("timeout", "2.5"),
    ])
    XCTAssertEqual(s.device, "/dev/video2")
    XCTAssertEqual(s.directory, "~/Photos")
    XCTAssertEqual(s.width, 1280)
    XCTAssertEqual(s.height, 720)
    XCTAssertEqual(s.warmupFrames, 0)
    XCTAssertEqual(s.timeout, 2.5)
    XCTAssertEqual(s.commandLine(for: "/p/a b.jpg"), ["snap", "--out", "/p/a b.jpg", "--q", "9"])
    var t = ShutterConfig()
    XCTAssertNil(t.commandLine(for: "/x.jpg"))
    t.captureCommand = ["tool", "--quiet"]
    XCTAssertEqual(t.commandLine(for: "/x.jpg"), ["tool", "--quiet", "/x.jpg"])
    XCTAssertEqual(ShutterConfig().device, "/dev/video0")
    for bad in [
      ("timeout", "0"), ("warmup_frames", "-1"), ("resolution", "big"), ("device", ""),
      ("capture_command", "a 'b"), ("colour", "red"),
    ] {
      XCTAssertThrowsError(try ShutterConfig(values: [bad]), "\(bad)")
    }
  }

  func testMediaConfig() throws {
    let m = try MediaConfig(values: [
      ("library", "/srv/music"), ("player", "vlc"), ("timeout", "3"), ("device", "plughw:0,0"),
    ])
    XCTAssertEqual(m.library, "/srv/music")
    XCTAssertEqual(m.player, "org.mpris.MediaPlayer2.vlc")
    XCTAssertEqual(m.timeout, 3)
    XCTAssertEqual(m.device, "plughw:0,0")
    XCTAssertEqual(
      try MediaConfig(values: [("player", "org.mpris.MediaPlayer2.spotify")]).player,
      "org.mpris.MediaPlayer2.spotify")
    XCTAssertNil(try MediaConfig(values: [("player", "")]).player)
    XCTAssertEqual(MediaConfig().library, "~/Music")
    for bad in [("player", "my player"), ("timeout", "soon"), ("library", ""), ("volume", "1")] {
      XCTAssertThrowsError(try MediaConfig(values: [bad]), "\(bad)")
    }
  }
}
