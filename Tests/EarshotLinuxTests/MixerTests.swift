import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// The mixer against PulseAudio's ALSA control plugin (card `default`,
/// control `Master`: 0…65536, no dB range), cross-checked with amixer and
/// pactl, which change it behind Earshot's back.
final class MixerTests: XCTestCase {
  override func setUpWithError() throws {
    try PulseServer.require()
    try PulseServer.resetSink()
  }

  override func tearDown() {
    PulseServer.resetSinkQuietly()
  }

  /// Waits on the mixer's descriptors for a change report; nil after 5 s.
  func nextChange(_ mixer: Mixer) throws -> VolumeState? {
    let deadline = Clock.monotonicNanos() + 5_000_000_000
    let fds = mixer.pollDescriptors()
    XCTAssertFalse(fds.isEmpty)
    while Clock.monotonicNanos() < deadline {
      var ready = fds
      let n = ready.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), 100) }
      if n > 0, let s = try mixer.handleReady(ready) { return s }
    }
    return nil
  }

  func testPulseMasterHasARawScale() throws {
    let mixer = try Mixer()
    XCTAssertEqual(mixer.scale.kind, .raw)
    XCTAssertEqual(mixer.scale.rawRange, 0...65536)
    XCTAssertTrue(mixer.canMute)
    XCTAssertEqual(mixer.state(), VolumeState(volume: 1, muted: false))
  }

  func testSetThroughEarshotReadBackWithAmixerAndPactl() throws {
    let mixer = try Mixer(card: "default", control: "Master")
    let s = try mixer.setVolume(0.37)
    XCTAssertEqual(s.volume, 0.37, accuracy: 0.0001)
    let amixer = try PulseServer.amixer("sget", "Master")
    XCTAssertTrue(amixer.contains("Playback 24248 [37%] [on]"), amixer)
    let pactl = try PulseServer.pactl("get-sink-volume", PulseServer.sink)
    XCTAssertTrue(pactl.contains("24248 /  37%"), pactl)
  }

  func testChangesByAmixerAndPactlArriveAsEvents() throws {
    let mixer = try Mixer()
    mixer.remember(mixer.state())
    try PulseServer.amixer("-q", "sset", "Master", "20%")
    XCTAssertEqual(try nextChange(mixer)?.volume ?? -1, 0.20, accuracy: 0.005)
    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "65%")
    XCTAssertEqual(try nextChange(mixer)?.volume ?? -1, 0.65, accuracy: 0.005)
    try PulseServer.pactl("set-sink-mute", PulseServer.sink, "1")
    XCTAssertEqual(try nextChange(mixer)?.muted, true)
    try PulseServer.amixer("-q", "sset", "Master", "unmute")
    XCTAssertEqual(try nextChange(mixer)?.muted, false)
  }

  func testOwnChangesAreNotEchoedBack() throws {
    let mixer = try Mixer()
    try mixer.setVolume(0.5)
    // Our own change may still produce an event; it must not be reported.
    var ready = mixer.pollDescriptors()
    _ = ready.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), 300) }
    XCTAssertNil(try mixer.handleReady(ready))
  }

  func testMuteRoundTripAndSettingAVolumeUnmutes() throws {
    let mixer = try Mixer()
    try mixer.setVolume(0.6)
    let muted = try mixer.setMuted(true)
    XCTAssertTrue(muted.muted)
    XCTAssertEqual(muted.volume, 0.6, accuracy: 0.0001, "muting keeps the volume")
    XCTAssertTrue(try PulseServer.pactl("get-sink-mute", PulseServer.sink).contains("yes"))
    XCTAssertTrue(try PulseServer.amixer("sget", "Master").contains("[off]"))
    XCTAssertEqual(try mixer.setMuted(false).muted, false)
    XCTAssertTrue(try PulseServer.pactl("get-sink-mute", PulseServer.sink).contains("no"))
    _ = try mixer.setMuted(true)
    XCTAssertEqual(try mixer.setVolume(0.3).muted, false)
    XCTAssertTrue(try PulseServer.pactl("get-sink-mute", PulseServer.sink).contains("no"))
    // A fresh mixer reads the same state.
    XCTAssertEqual(try Mixer().state().volume, 0.3, accuracy: 0.0001)
  }

  func testUnknownControlListsTheControlsThereAre() throws {
    XCTAssertThrowsError(try Mixer(control: "Headphone")) { error in
      XCTAssertEqual(
        "\(error)", "card 'default' has no playback volume control 'Headphone'; it has: Master")
    }
  }

  func testUnknownCardSaysWhichAndWhy() throws {
    XCTAssertThrowsError(try Mixer(card: "7")) { error in
      let text = "\(error)"
      XCTAssertTrue(
        text.hasPrefix("cannot open the mixer of card 'hw:7': No such file or directory"), text)
    }
  }

  // MARK: The CLI

  func testVolumeCommandPrintsSetsStepsAndMutes() throws {
    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "40%")
    XCTAssertEqual(try Earshot.run(["volume"]).stdout, "{\"volume\":0.40,\"muted\":false}\n")
    XCTAssertEqual(
      try Earshot.run(["volume", "set", "0.37"]).stdout, "{\"volume\":0.37,\"muted\":false}\n")
    XCTAssertEqual(
      try Earshot.run(["volume", "set", "+5%"]).stdout, "{\"volume\":0.42,\"muted\":false}\n")
    XCTAssertEqual(
      try Earshot.run(["volume", "set", "-10%"]).stdout, "{\"volume\":0.32,\"muted\":false}\n")
    XCTAssertEqual(
      try Earshot.run(["volume", "mute"]).stdout, "{\"volume\":0.32,\"muted\":true}\n")
    XCTAssertTrue(try PulseServer.pactl("get-sink-mute", PulseServer.sink).contains("yes"))
    XCTAssertEqual(
      try Earshot.run(["volume", "unmute"]).stdout, "{\"volume\":0.32,\"muted\":false}\n")
    XCTAssertTrue(try PulseServer.amixer("sget", "Master").contains("[32%] [on]"))
  }

  func testVolumeCommandRejectsBadInputAndChangesNothing() throws {
    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "50%")
    for args in [
      ["volume", "set", "1.5"], ["volume", "set"], ["volume", "louder"], ["volume", "mute", "now"],
    ] {
      let r = try Earshot.run(args)
      XCTAssertEqual(r.status, 2, args.joined(separator: " "))
      XCTAssertTrue(r.stderr.contains("earshot volume:"), r.stderr)
    }
    XCTAssertEqual(try Mixer().state().volume, 0.5, accuracy: 0.0001)
    let r = try Earshot.run(["volume", "--control", "Nope"])
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(r.stderr.contains("it has: Master"), r.stderr)
  }

  func testVolumeWatchPrintsOneLinePerChangeAndStopsOnSIGTERM() throws {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: Earshot.binary)
    p.arguments = ["volume", "watch"]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let lines = LineReader(out.fileHandleForReading.fileDescriptor)
    XCTAssertEqual(lines.next(), "{\"volume\":1.00,\"muted\":false}")  // the state now
    try PulseServer.amixer("-q", "sset", "Master", "30%")
    XCTAssertEqual(lines.next(), "{\"volume\":0.30,\"muted\":false}")
    try PulseServer.pactl("set-sink-mute", PulseServer.sink, "1")
    XCTAssertEqual(lines.next(), "{\"volume\":0.30,\"muted\":true}")
    try PulseServer.pactl("set-sink-volume", PulseServer.sink, "70%")
    XCTAssertEqual(lines.next(), "{\"volume\":0.70,\"muted\":true}")
    p.terminate()
    p.waitUntilExit()
    XCTAssertEqual(p.terminationReason, .exit)
    XCTAssertEqual(p.terminationStatus, 0)
  }
}

/// Reads lines from a descriptor, waiting up to 5 s for each.
final class LineReader {
  let fd: Int32
  var buffer: [UInt8] = []

  init(_ fd: Int32) { self.fd = fd }

  func next() -> String? {
    let deadline = Clock.monotonicNanos() + 5_000_000_000
    while true {
      if let nl = buffer.firstIndex(of: 0x0A) {
        let line = String(decoding: buffer[..<nl], as: UTF8.self)
        buffer.removeSubrange(...nl)
        return line
      }
      let now = Clock.monotonicNanos()
      guard now < deadline else { return nil }
      var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&p, 1, Int32((deadline - now) / 1_000_000)) > 0 else { return nil }
      var chunk = [UInt8](repeating: 0, count: 4096)
      let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { return nil }
      buffer.append(contentsOf: chunk[0..<n])
    }
  }
}
