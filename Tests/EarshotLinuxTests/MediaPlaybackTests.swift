import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// Test tones with known frequencies, and helpers to run commands and
/// measure recordings.
enum MediaFixtures {
  /// A library of three tones: a FLAC with TITLE/ARTIST tags (660 Hz), an
  /// untagged WAV titled by its file name (440 Hz), an Ogg Vorbis with an
  /// accented file name (880 Hz), and an AAC-named file libsndfile cannot
  /// read.
  static func library() throws -> String {
    guard let sox = Earshot.tool("sox") else { try requireResource("sox (package sox)") }
    let dir = NSTemporaryDirectory() + "earshot-media-\(getpid())"
    if FileManager.default.fileExists(atPath: dir + "/.ready") { return dir }
    try FileManager.default.createDirectory(
      atPath: dir + "/albums", withIntermediateDirectories: true)
    func make(_ args: [String]) throws {
      let r = try Earshot.run(args, executable: sox)
      XCTAssertEqual(r.status, 0, r.stderr)
    }
    try make([
      "-n", "-r", "48000", "-c", "2", "--comment", "TITLE=Morning Sun", "--add-comment",
      "ARTIST=Test Band", dir + "/albums/track01.flac", "synth", "4", "sine", "660", "vol", "0.5",
    ])
    try make([
      "-n", "-r", "44100", "-c", "1", dir + "/A440 Tone.wav", "synth", "4", "sine", "440", "vol",
      "0.5",
    ])
    try make([
      "-n", "-r", "48000", "-c", "2", dir + "/Élan.ogg", "synth", "4", "sine", "880", "vol", "0.5",
    ])
    _ = FileManager.default.createFile(atPath: dir + "/Tune.m4a", contents: Data([0, 0, 0, 0x20]))
    _ = FileManager.default.createFile(atPath: dir + "/.ready", contents: nil)
    return dir
  }

  /// Strength of `frequency` in `samples` (Goertzel), per sample.
  static func power(_ samples: ArraySlice<Int16>, _ frequency: Double, rate: Double) -> Double {
    let k = 2 * cos(2 * Double.pi * frequency / rate)
    var s1 = 0.0
    var s2 = 0.0
    for x in samples {
      let s = Double(x) + k * s1 - s2
      s2 = s1
      s1 = s
    }
    return (s1 * s1 + s2 * s2 - k * s1 * s2) / Double(samples.count * samples.count)
  }

  /// The strongest frequency between 100 and 2000 Hz, to 5 Hz.
  static func dominant(_ samples: ArraySlice<Int16>, rate: Double) -> Double {
    var best = (f: 0.0, p: -1.0)
    for f in stride(from: 100.0, through: 2000.0, by: 5.0) {
      let p = power(samples, f, rate: rate)
      if p > best.p { best = (f, p) }
    }
    return best.f
  }

  static func rms(_ samples: ArraySlice<Int16>) -> Double {
    guard !samples.isEmpty else { return 0 }
    return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count))
      .squareRoot()
  }

  static func samples(_ data: Data) -> [Int16] {
    data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
  }
}

/// `earshot play` end to end through real ALSA (the null sink of PulseAudio
/// and of PipeWire), recorded and measured.
final class MediaPlaybackTests: XCTestCase {
  func testUnknownTitleIsNotFound() throws {
    let lib = try MediaFixtures.library()
    let r = try Earshot.run(["play", "--library", lib, "Yesterday Once More"])
    XCTAssertEqual(r.status, 1)
    XCTAssertEqual(r.stdout, "{\"request\":1,\"result\":\"notFound\",\"code\":1}\n")
    XCTAssertTrue(r.stderr.contains("no title matches"), r.stderr)
  }

  func testUndecodableFileIsUnsupported() throws {
    let lib = try MediaFixtures.library()
    let r = try Earshot.run(["play", "--library", lib, "tune"])
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(r.stdout.contains("\"result\":\"unsupportedMediaType\",\"code\":2"), r.stdout)
  }

  func testListShowsTagsAndFileNamesBestFirst() throws {
    let lib = try MediaFixtures.library()
    let tagged = try Earshot.run(["play", "--library", lib, "--list", "MORNING sun"])
    XCTAssertEqual(tagged.status, 0, tagged.stderr)
    XCTAssertTrue(
      tagged.stdout.hasPrefix(
        "{\"score\":5000,\"match\":\"exact\",\"title\":\"Morning Sun\",\"artist\":\"Test Band\""),
      tagged.stdout)
    let accent = try Earshot.run(["play", "--library", lib, "--list", "elan"])
    XCTAssertTrue(accent.stdout.contains("\"title\":\"Élan\""), accent.stdout)
    let byName = try Earshot.run(["play", "--library", lib, "--list", "a440"])
    XCTAssertTrue(byName.stdout.contains("\"title\":\"A440 Tone\""), byName.stdout)
  }

  func testMissingLibraryIsNotFoundWithAMessage() throws {
    let r = try Earshot.run(["play", "--library", "/nonexistent/music", "anything"])
    XCTAssertEqual(r.status, 1)
    XCTAssertTrue(r.stdout.contains("notFound"))
    XCTAssertTrue(r.stderr.contains("cannot read /nonexistent/music"), r.stderr)
  }

  /// The recording holds the requested file's tone (its spectrum's peak is
  /// the file's), not the other files', and falls silent when stopped.
  func testRecordedOutputIsTheRequestedFile() throws {
    try recordedOutputIsTheRequestedFile(on: .pulse)
  }

  /// The same on PipeWire (the `pipewire` PCM).
  func testRecordedOutputOnPipeWireIsTheRequestedFile() throws {
    try recordedOutputIsTheRequestedFile(on: .pipewire)
  }

  func recordedOutputIsTheRequestedFile(on server: SoundServer) throws {
    try server.require()
    let lib = try MediaFixtures.library()
    var env = Earshot.environment(server.environment)
    env["XDG_RUNTIME_DIR"] = PulseServer.runtime

    // An idle null sink sends its monitor nothing, and the recorder then
    // holds back what it has: a stream of silence keeps the sink running.
    let keeper = Process()
    keeper.executableURL = URL(fileURLWithPath: Earshot.tool("pacat")!)
    keeper.arguments = [
      "--playback", "--raw", "--format=s16le", "--rate=48000", "--channels=1",
      "--latency-msec=20", "/dev/zero",
    ]
    keeper.environment = env
    try keeper.run()
    defer { keeper.terminate() }

    // Record the null sink's monitor.
    let recPath = NSTemporaryDirectory() + "earshot-play-rec-\(getpid()).raw"
    _ = FileManager.default.createFile(atPath: recPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: recPath) }
    let parec = Process()
    parec.executableURL = URL(fileURLWithPath: Earshot.tool("parec")!)
    parec.arguments = [
      "-d", "alert.monitor", "--latency-msec=20", "--raw", "--format=s16le", "--rate=48000",
      "--channels=1", recPath,
    ]
    parec.environment = env
    parec.standardInput = FileHandle.nullDevice
    parec.standardOutput = FileHandle.nullDevice
    try parec.run()
    defer { if parec.isRunning { parec.terminate() } }
    Thread.sleep(forTimeInterval: 0.4)  // the recorder is connected
    let recordStart = Date()

    let play = Process()
    play.executableURL = URL(fileURLWithPath: Earshot.binary)
    play.arguments = ["play", "--library", lib, "--device", server.card, "ELAN"]
    play.environment = env
    let out = Pipe()
    play.standardOutput = out
    play.standardError = FileHandle.standardError
    try play.run()
    // The completion line comes when the first audio has been written.
    let line = firstLine(of: out)
    let completedAt = Date().timeIntervalSince(recordStart)
    let json = try XCTUnwrap(
      JSONSerialization.jsonObject(with: line) as? [String: Any])
    XCTAssertEqual(json["result"] as? String, "success")
    XCTAssertEqual(json["title"] as? String, "Élan")

    Thread.sleep(forTimeInterval: 2.0)
    XCTAssertTrue(play.isRunning, "earshot play ended before the stop")
    // Standalone, SIGTERM stops it (the agent's 'earshot stop' is DaemonMediaTests').
    play.terminate()
    play.waitUntilExit()
    let stoppedAt = Date().timeIntervalSince(recordStart)
    Thread.sleep(forTimeInterval: 0.6)
    parec.interrupt()
    parec.waitUntilExit()

    let rec = MediaFixtures.samples(try Data(contentsOf: URL(fileURLWithPath: recPath)))
    let rate = 48000.0
    // Find the sound by its level. (How much of it the recorder got depends
    // on the server's load, so the duration is not measured.)
    let block = 480
    let loud = stride(from: 0, to: rec.count - block, by: block).filter {
      MediaFixtures.rms(rec[$0..<$0 + block]) > 1000
    }
    let onset = try XCTUnwrap(loud.first, "no sound recorded (\(rec.count) samples)")
    let heard = Double(loud.count * block) / rate
    XCTAssertLessThan(completedAt, 3, "the completion came late")
    let a = onset + 960
    let window = rec[a..<min(a + 9600, rec.count)]
    XCTAssertEqual(window.count, 9600, "too little sound recorded: \(heard) s")

    // The file's own spectrum, decoded by sox.
    let sox = try XCTUnwrap(Earshot.tool("sox"))
    let decoded = try Earshot.runData(
      [lib + "/Élan.ogg", "-t", "raw", "-r", "48000", "-c", "1", "-e", "signed", "-b", "16", "-"],
      executable: sox)
    let file = MediaFixtures.samples(decoded)
    let fileWindow = file[24000..<48000]
    let fileF = MediaFixtures.dominant(fileWindow, rate: rate)
    let recF = MediaFixtures.dominant(window, rate: rate)
    XCTAssertEqual(fileF, 880, accuracy: 5)
    XCTAssertEqual(recF, fileF, accuracy: 5, "the recording's peak is not the file's")
    print(
      "play: completion after \(completedAt) s, heard \(heard) s, peak \(recF) Hz (file \(fileF) Hz)"
    )
    // Not one of the other titles.
    let p = { MediaFixtures.power(window, $0, rate: rate) }
    XCTAssertGreaterThan(p(880), 100 * p(660))
    XCTAssertGreaterThan(p(880), 100 * p(440))

    // Stopped: earshot play exited cleanly and its stream is gone.
    XCTAssertEqual(play.terminationStatus, 0)
    XCTAssertLessThan(
      stoppedAt - completedAt, 4, "earshot stop did not end it before the file's end")
    let inputs = try Earshot.runEnv(
      ["-c", "pactl list short sink-inputs | wc -l"], env: env, executable: "/bin/sh")
    XCTAssertEqual(
      inputs.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "1",
      "only the silence keeper plays")
  }
}

extension Earshot {
  static func runEnv(_ args: [String], env: [String: String], executable: String = binary) throws
    -> (status: Int32, stdout: String, stderr: String)
  {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = args
    p.environment = env
    let out = Pipe()
    let err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    let e = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (
      p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self)
    )
  }

  static func runData(_ args: [String], executable: String) throws -> Data {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = args
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return data
  }
}
