import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// One of the two test sound servers, each with a null sink "alert":
/// PulseAudio (scripts/services/pulseaudio.sh, reached through ALSA's
/// `default`) or PipeWire (scripts/services/pipewire.sh, reached through
/// the `pipewire` PCM and ctl its ALSA plugins provide). Both run at once;
/// an audio test class runs against each, and a server that is missing
/// fails in CI.
struct SoundServer: CustomStringConvertible {
  let description: String
  /// The ALSA ctl and PCM name that reaches the server.
  let card: String
  /// The pulse-protocol socket (PipeWire's comes from pipewire-pulse),
  /// for pactl and parec.
  let pulseSocket: String
  let serviceScript: String
  /// Underruns an alert may take while it starts (see `AlertPlayerTests`):
  /// PipeWire's graph runs at 1024-frame quanta (21 ms) until it adapts
  /// to a new stream's 10 ms periods, more than a 40 ms buffer can bridge.
  let startRecoveries: Int

  let sink = "alert"

  static let pulse = SoundServer(
    description: "PulseAudio", card: "default", pulseSocket: PulseServer.socket,
    serviceScript: "scripts/services/pulseaudio.sh", startRecoveries: 0)

  /// scripts/services/pipewire.sh's runtime directory.
  static let pipewireRuntime =
    ProcessInfo.processInfo.environment["EARSHOT_PIPEWIRE_RUNTIME"] ?? "/tmp/xdg-pw"

  static let pipewire = SoundServer(
    description: "PipeWire", card: "pipewire", pulseSocket: pipewireRuntime + "/pulse/native",
    serviceScript: "scripts/services/pipewire.sh", startRecoveries: 3)

  /// What a tool run against this server needs over the process's own
  /// environment.
  var environment: [String: String] { ["PULSE_SERVER": "unix:" + pulseSocket] }

  /// `earshot volume`'s options for this server's mixer (none for
  /// PulseAudio, whose ctl is ALSA's `default`).
  var cardOptions: [String] { card == "default" ? [] : ["--card", card] }

  /// Points this process at the servers and checks this one answers.
  func require(file: StaticString = #filePath, line: UInt = #line) throws {
    try PulseServer.require(file: file, line: line)
    guard card == "pipewire" else { return }
    // The `pipewire` PCM and ctl, defined next to the server; ALSA reads
    // the changed path at its next open. PulseAudio's `default` is
    // untouched (alsa.conf still comes first).
    let conf = Self.pipewireRuntime + "/alsa.conf"
    setenv("ALSA_CONFIG_PATH", "/usr/share/alsa/alsa.conf:" + conf, 1)
    setenv("PIPEWIRE_RUNTIME_DIR", Self.pipewireRuntime, 1)
    guard FileManager.default.fileExists(atPath: conf),
      let sinks = try? Earshot.run(
        ["list", "short", "sinks"], executable: Earshot.tool("pactl")!, environment: environment),
      sinks.status == 0, sinks.stdout.contains("\t\(sink)\t")
    else {
      try requireResource(
        "the PipeWire test server with sink '\(sink)' (run \(serviceScript))", file: file,
        line: line)
    }
  }

  @discardableResult
  func pactl(_ args: String...) throws -> String {
    let r = try Earshot.run(args, executable: Earshot.tool("pactl")!, environment: environment)
    XCTAssertEqual(r.status, 0, "pactl \(args.joined(separator: " ")) on \(self): \(r.stderr)")
    return r.stdout
  }

  @discardableResult
  func amixer(_ args: String...) throws -> String {
    let r = try Earshot.run(["-D", card] + args, executable: Earshot.tool("amixer")!)
    XCTAssertEqual(r.status, 0, "amixer \(args.joined(separator: " ")) on \(self): \(r.stderr)")
    return r.stdout
  }

  /// `earshot volume ARGS` on this server's mixer.
  func volume(_ args: String...) throws -> Earshot.Result {
    try Earshot.run(["volume"] + args + cardOptions)
  }

  /// Full volume, unmuted: recorded levels are then the samples played.
  func resetSink() throws {
    try pactl("set-sink-volume", sink, "100%")
    try pactl("set-sink-mute", sink, "0")
  }

  /// The same, after a test, without failing when the server is gone.
  func resetSinkQuietly() {
    let pactl = Earshot.tool("pactl") ?? "/usr/bin/pactl"
    _ = try? Earshot.run(
      ["set-sink-volume", sink, "100%"], executable: pactl, environment: environment)
    _ = try? Earshot.run(["set-sink-mute", sink, "0"], executable: pactl, environment: environment)
  }

  /// Fails unless pactl's server is PipeWire's: a PipeWire test class
  /// must not pass by reaching PulseAudio.
  func assertIsPipeWire(file: StaticString = #filePath, line: UInt = #line) throws {
    let info = try pactl("info")
    XCTAssertTrue(info.contains("(on PipeWire "), "\(self): \(info)", file: file, line: line)
    let controls = try amixer("scontrols")
    XCTAssertTrue(controls.contains("'Master'"), controls, file: file, line: line)
  }
}
