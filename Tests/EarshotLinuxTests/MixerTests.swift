import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// The mixer against a sound server's ALSA control plugin (control
/// `Master`: 0…65536, no dB range), cross-checked with amixer and pactl,
/// which change it behind Earshot's back. This class runs on PulseAudio
/// (card `default`), `PipeWireMixerTests` the same tests on PipeWire.
class MixerTests: XCTestCase {
  var server: SoundServer { .pulse }

  override func setUpWithError() throws {
    try server.require()
    try server.resetSink()
  }

  override func tearDown() {
    server.resetSinkQuietly()
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

  func testMasterHasARawScale() throws {
    let mixer = try Mixer(card: server.card)
    XCTAssertEqual(mixer.scale.kind, .raw)
    XCTAssertEqual(mixer.scale.rawRange, 0...65536)
    XCTAssertTrue(mixer.canMute)
    XCTAssertEqual(mixer.state(), VolumeState(volume: 1, muted: false))
  }

  func testSetThroughEarshotReadBackWithAmixerAndPactl() throws {
    let mixer = try Mixer(card: server.card, control: "Master")
    let s = try mixer.setVolume(0.37)
    XCTAssertEqual(s.volume, 0.37, accuracy: 0.0001)
    let amixer = try server.amixer("sget", "Master")
    XCTAssertTrue(amixer.contains("Playback 24248 [37%] [on]"), amixer)
    let pactl = try server.pactl("get-sink-volume", server.sink)
    XCTAssertTrue(pactl.contains("24248 /  37%"), pactl)
  }

  func testChangesByAmixerAndPactlArriveAsEvents() throws {
    let mixer = try Mixer(card: server.card)
    mixer.remember(mixer.state())
    try server.amixer("-q", "sset", "Master", "20%")
    XCTAssertEqual(try nextChange(mixer)?.volume ?? -1, 0.20, accuracy: 0.005)
    try server.pactl("set-sink-volume", server.sink, "65%")
    XCTAssertEqual(try nextChange(mixer)?.volume ?? -1, 0.65, accuracy: 0.005)
    try server.pactl("set-sink-mute", server.sink, "1")
    XCTAssertEqual(try nextChange(mixer)?.muted, true)
    try server.amixer("-q", "sset", "Master", "unmute")
    XCTAssertEqual(try nextChange(mixer)?.muted, false)
  }

  /// A long-lived mixer that has not yet handled the events of another
  /// client's decrease (a daemon between two loop turns) still reports the
  /// server's volume when it mutes.
  func testMuteAfterAnotherClientsDecreaseReportsTheServersVolume() throws {
    let mixer = try Mixer(card: server.card)
    try mixer.setVolume(0.8)
    try server.amixer("-q", "sset", "Master", "30%")
    XCTAssertEqual(try mixer.setMuted(true).volume, 0.30, accuracy: 0.005)
    XCTAssertEqual(mixer.state().volume, 0.30, accuracy: 0.005)
  }

  func testOwnChangesAreNotEchoedBack() throws {
    let mixer = try Mixer(card: server.card)
    try mixer.setVolume(0.5)
    // Our own change may still produce an event; it must not be reported.
    var ready = mixer.pollDescriptors()
    _ = ready.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), 300) }
    XCTAssertNil(try mixer.handleReady(ready))
  }

  func testMuteRoundTripAndSettingAVolumeUnmutes() throws {
    let mixer = try Mixer(card: server.card)
    try mixer.setVolume(0.6)
    let muted = try mixer.setMuted(true)
    XCTAssertTrue(muted.muted)
    XCTAssertEqual(muted.volume, 0.6, accuracy: 0.0001, "muting keeps the volume")
    XCTAssertTrue(try server.pactl("get-sink-mute", server.sink).contains("yes"))
    XCTAssertTrue(try server.amixer("sget", "Master").contains("[off]"))
    XCTAssertEqual(try mixer.setMuted(false).muted, false)
    XCTAssertTrue(try server.pactl("get-sink-mute", server.sink).contains("no"))
    _ = try mixer.setMuted(true)
    XCTAssertEqual(try mixer.setVolume(0.3).muted, false)
    XCTAssertTrue(try server.pactl("get-sink-mute", server.sink).contains("no"))
    // A fresh mixer reads the same state.
    XCTAssertEqual(try Mixer(card: server.card).state().volume, 0.3, accuracy: 0.0001)
  }

  func testUnknownControlListsTheControlsThereAre() throws {
    XCTAssertThrowsError(try Mixer(card: server.card, control: "Headphone")) { error in
      XCTAssertEqual(
        "\(error)",
        "card '\(server.card)' has no playback volume control 'Headphone'; it has: Master")
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
    try server.pactl("set-sink-volume", server.sink, "40%")
    XCTAssertEqual(try server.volume().stdout, "{\"volume\":0.40,\"muted\":false}\n")
    XCTAssertEqual(
      try server.volume("set", "0.37").stdout, "{\"volume\":0.37,\"muted\":false}\n")
    XCTAssertEqual(
      try server.volume("set", "+5%").stdout, "{\"volume\":0.42,\"muted\":false}\n")
    XCTAssertEqual(
      try server.volume("set", "-10%").stdout, "{\"volume\":0.32,\"muted\":false}\n")
    XCTAssertEqual(
      try server.volume("mute").stdout, "{\"volume\":0.32,\"muted\":true}\n")
    XCTAssertTrue(try server.pactl("get-sink-mute", server.sink).contains("yes"))
    XCTAssertEqual(
      try server.volume("unmute").stdout, "{\"volume\":0.32,\"muted\":false}\n")
    XCTAssertTrue(try server.amixer("sget", "Master").contains("[32%] [on]"))
  }

  func testVolumeCommandRejectsBadInputAndChangesNothing() throws {
    try server.pactl("set-sink-volume", server.sink, "50%")
    for args in [
      ["volume", "set", "1.5"], ["volume", "set"], ["volume", "louder"], ["volume", "mute", "now"],
    ] {
      let r = try Earshot.run(args + server.cardOptions)
      XCTAssertEqual(r.status, 2, args.joined(separator: " "))
      XCTAssertTrue(r.stderr.contains("earshot volume:"), r.stderr)
    }
    XCTAssertEqual(try Mixer(card: server.card).state().volume, 0.5, accuracy: 0.0001)
    let r = try server.volume("--control", "Nope")
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(r.stderr.contains("it has: Master"), r.stderr)
  }

  /// `earshot volume watch` on this server, its output line by line.
  func startWatch() throws -> (Process, LineReader) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: Earshot.binary)
    p.arguments = ["volume", "watch"] + server.cardOptions
    p.environment = Earshot.environment()
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    return (p, LineReader(out.fileHandleForReading.fileDescriptor))
  }

  func testVolumeWatchPrintsOneLinePerChangeAndStopsOnSIGTERM() throws {
    let (p, lines) = try startWatch()
    XCTAssertEqual(lines.next(), "{\"volume\":1.00,\"muted\":false}")  // the state now
    try server.amixer("-q", "sset", "Master", "30%")
    XCTAssertEqual(lines.next(), "{\"volume\":0.30,\"muted\":false}")
    try server.pactl("set-sink-mute", server.sink, "1")
    XCTAssertEqual(lines.next(), "{\"volume\":0.30,\"muted\":true}")
    try server.pactl("set-sink-volume", server.sink, "70%")
    XCTAssertEqual(lines.next(), "{\"volume\":0.70,\"muted\":true}")
    p.terminate()
    p.waitUntilExit()
    XCTAssertEqual(p.terminationReason, .exit)
    XCTAssertEqual(p.terminationStatus, 0)
  }

  /// Decreases made through the ALSA ctl by other processes (amixer, a
  /// second earshot) are reported, and the state after them is the
  /// server's: on PipeWire 0.3.65 a long-lived ctl handle keeps the right
  /// channel at its old value, which hid every decrease and made a later
  /// mute report the old volume.
  func testVolumeWatchSeesDecreasesMadeThroughTheALSACtl() throws {
    let (p, lines) = try startWatch()
    XCTAssertEqual(lines.next(), "{\"volume\":1.00,\"muted\":false}")
    for level in ["90", "30", "65", "20", "15"] {
      try server.amixer("-q", "sset", "Master", level + "%")
      XCTAssertEqual(lines.next(), "{\"volume\":0.\(level),\"muted\":false}", "amixer \(level)%")
    }
    XCTAssertEqual(try server.volume("set", "0.10").status, 0)
    XCTAssertEqual(lines.next(), "{\"volume\":0.10,\"muted\":false}", "earshot volume set 0.10")
    try server.pactl("set-sink-mute", server.sink, "1")
    XCTAssertEqual(lines.next(), "{\"volume\":0.10,\"muted\":true}")
    XCTAssertTrue(try server.pactl("get-sink-volume", server.sink).contains("/  10%"))
    p.interrupt()
    p.waitUntilExit()
    XCTAssertEqual(p.terminationReason, .exit, "SIGINT ends the watch with a normal exit")
    XCTAssertEqual(p.terminationStatus, 0)
  }

  /// Nothing but changes is printed: a quiet server gives a quiet watch
  /// (a read through a fresh connection must not itself cause an event).
  func testVolumeWatchIsQuietWhileNothingChanges() throws {
    let (p, lines) = try startWatch()
    XCTAssertEqual(lines.next(), "{\"volume\":1.00,\"muted\":false}")
    try server.amixer("-q", "sset", "Master", "50%")
    XCTAssertEqual(lines.next(), "{\"volume\":0.50,\"muted\":false}")
    usleep(1_000_000)
    p.terminate()
    XCTAssertNil(lines.next(), "no line after the change")
    p.waitUntilExit()
    XCTAssertEqual(p.terminationStatus, 0)
  }
}

/// The same mixer tests on PipeWire, through its ALSA ctl `pipewire`.
final class PipeWireMixerTests: MixerTests {
  override var server: SoundServer { .pipewire }

  /// Linux test discovery lists a class by the tests it declares (then
  /// runs the inherited ones too), so each PipeWire class declares this.
  func testTheServerIsPipeWire() throws { try server.assertIsPipeWire() }
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
