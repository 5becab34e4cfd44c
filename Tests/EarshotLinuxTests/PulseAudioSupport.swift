import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// The PulseAudio test server that scripts/services/pulseaudio.sh starts:
/// a null sink "alert" whose monitor the tests record. ALSA's `default`
/// reaches it through the pulse plugin once this process can find the
/// server, so `require()` must run before the first ALSA call.
enum PulseServer {
  /// scripts/services/pulseaudio.sh's runtime directory (it honours the
  /// same variable, so parallel checkouts can run servers side by side).
  static let runtime = ProcessInfo.processInfo.environment["EARSHOT_PULSE_RUNTIME"] ?? "/tmp/xdg"
  static let socket = runtime + "/pulse/native"
  static let sink = "alert"

  static func require(file: StaticString = #filePath, line: UInt = #line) throws {
    // Pin this process (and the tools it runs) to the test server, even on
    // a desktop whose own server would otherwise answer.
    setenv("PULSE_SERVER", "unix:" + socket, 1)
    setenv("XDG_RUNTIME_DIR", runtime, 1)
    for tool in ["pactl", "parec", "amixer"] where Earshot.tool(tool) == nil {
      try requireResource("\(tool) (scripts/deps.sh test installs it)", file: file, line: line)
    }
    guard
      let sinks = try? Earshot.run(["list", "short", "sinks"], executable: Earshot.tool("pactl")!),
      sinks.status == 0, sinks.stdout.contains("\t\(sink)\t")
    else {
      try requireResource(
        "the PulseAudio test server with sink '\(sink)' (run scripts/services/pulseaudio.sh)",
        file: file, line: line)
    }
  }

  @discardableResult
  static func pactl(_ args: String...) throws -> String {
    let r = try Earshot.run(args, executable: Earshot.tool("pactl")!)
    XCTAssertEqual(r.status, 0, "pactl \(args.joined(separator: " ")): \(r.stderr)")
    return r.stdout
  }

  @discardableResult
  static func amixer(_ args: String...) throws -> String {
    let r = try Earshot.run(["-D", "default"] + args, executable: Earshot.tool("amixer")!)
    XCTAssertEqual(r.status, 0, "amixer \(args.joined(separator: " ")): \(r.stderr)")
    return r.stdout
  }

  /// Full volume, unmuted: recorded levels are then the samples played.
  static func resetSink() throws {
    try pactl("set-sink-volume", sink, "100%")
    try pactl("set-sink-mute", sink, "0")
  }

  /// The same, after a test, without failing when the server is gone (the
  /// test itself has said so).
  static func resetSinkQuietly() {
    let pactl = Earshot.tool("pactl") ?? "/usr/bin/pactl"
    _ = try? Earshot.run(["set-sink-volume", sink, "100%"], executable: pactl)
    _ = try? Earshot.run(["set-sink-mute", sink, "0"], executable: pactl)
  }
}

/// Records the null sink's monitor with parec (48 kHz mono, 16-bit) on a
/// background thread, and maps monotonic times to sample positions: each
/// read's arrival time bounds when its last sample was captured, so
/// (arrival - duration so far) bounds the clock time of sample 0, and the
/// earliest bound among the reads just after a time anchors it. Not the
/// earliest of all: a server can drop captured audio (PipeWire did on a
/// loaded CI machine, and a mapping anchored once at the start then ran
/// 100 ms and more ahead of the sound). A loss raises the bounds of every
/// read after it, a read that is only late raises its own.
final class MonitorRecorder: @unchecked Sendable {
  static let rate = 48_000

  /// One recording shared by a test class (parec takes a second or more to
  /// deliver its first audio, too long to pay per test).
  nonisolated(unsafe) private static var current: MonitorRecorder?

  static func shared(_ server: SoundServer = .pulse) throws -> MonitorRecorder {
    if let current, current.server.card == server.card { return current }
    stopShared()
    let r = try MonitorRecorder(server)
    try r.waitUntilFlowing()
    current = r
    return r
  }

  static func stopShared() {
    current?.stop()
    current = nil
  }
  let server: SoundServer
  private let process = Process()
  private let lock = NSLock()
  private var bytes = [UInt8]()
  /// Each read: when it arrived, and its bound on the time of sample 0.
  private var reads: [(arrival: UInt64, bound: UInt64)] = []
  /// The reads that anchor a time: those of the next half second.
  private static let anchorWindow: UInt64 = 500_000_000
  private var reader: Thread?
  private let pipe = Pipe()

  init(_ server: SoundServer = .pulse) throws {
    self.server = server
    process.executableURL = URL(fileURLWithPath: Earshot.tool("parec")!)
    process.environment = Earshot.environment(server.environment)
    process.arguments = [
      "-d", "\(server.sink).monitor", "--format=s16le", "--rate=\(Self.rate)",
      // The left channel alone: PulseAudio averages a stereo sink down to
      // mono, PipeWire adds the channels at -3 dB each (+3 dB on a sound
      // played to both), so a downmix would read levels differently.
      "--channels=1", "--channel-map=front-left", "--latency-msec=10", "--raw",
    ]
    let out = pipe
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    // read(2) directly: FileHandle.availableData traps on EINTR, which the
    // SIGCHLD of other test subprocesses causes.
    let fd = out.fileHandleForReading.fileDescriptor
    let t = Thread { [self] in
      var chunk = [UInt8](repeating: 0, count: 65_536)
      while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return }
        let now = Clock.monotonicNanos()
        lock.lock()
        bytes.append(contentsOf: chunk[0..<n])
        let duration = UInt64(bytes.count / 2) * 1_000_000_000 / UInt64(Self.rate)
        if now > duration { reads.append((now, now - duration)) }
        lock.unlock()
      }
    }
    reader = t
    t.start()
  }

  deinit { stop() }

  func stop() {
    if process.isRunning { process.terminate() }
  }

  var sampleCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return bytes.count / 2
  }

  /// Waits until parec delivers audio (its first data can take a second
  /// or more) and for `seconds` more of it, so the anchor has settled.
  func waitUntilFlowing(seconds: Double = 0.3) throws {
    let want = Int(seconds * Double(Self.rate))
    var start: Int? = nil
    for _ in 0..<1000 {
      let n = sampleCount
      if n > 0 && start == nil { start = n }
      if let s = start, n - s >= want { return }
      usleep(10_000)
    }
    XCTFail("parec delivered no audio from \(server.sink).monitor on \(server) within 10 s")
    throw XCTSkip("no recording")
  }

  /// Waits until the recording covers `time` plus `seconds`.
  func waitUntilRecorded(past time: UInt64, seconds: Double) {
    let want = index(at: time) + Int(seconds * Double(Self.rate))
    for _ in 0..<1000 where sampleCount < want { usleep(10_000) }
  }

  /// The sample position captured at monotonic `time`.
  func index(at time: UInt64) -> Int {
    lock.lock()
    defer { lock.unlock() }
    guard let lastRead = reads.last else { return 0 }
    // The reads that arrived in the half second from `time` (or, for a time
    // not recorded that long yet, the last half second's).
    let from = min(
      time, lastRead.arrival > Self.anchorWindow ? lastRead.arrival - Self.anchorWindow : 0)
    var lo = 0
    var hi = reads.count
    while lo < hi {
      let mid = (lo + hi) / 2
      if reads[mid].arrival < from { lo = mid + 1 } else { hi = mid }
    }
    var anchor = UInt64.max
    for r in reads[lo...] {
      if r.arrival > from + Self.anchorWindow { break }
      anchor = min(anchor, r.bound)
    }
    guard time > anchor else { return 0 }
    return Int((time - anchor) * UInt64(Self.rate) / 1_000_000_000)
  }

  /// The samples recorded so far.
  func samples() -> [Int16] {
    lock.lock()
    defer { lock.unlock() }
    return bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
  }
}

/// Measurements on a recording, in milliseconds from an index.
struct Recording {
  let samples: [Int16]
  let rate = MonitorRecorder.rate

  func frames(_ ms: Double) -> Int { Int(ms * Double(rate) / 1000) }

  /// The slice from `from` + `startMs` to `from` + `endMs`, clamped.
  func slice(from: Int, _ startMs: Double, _ endMs: Double) -> ArraySlice<Int16> {
    let a = min(max(0, from + frames(startMs)), samples.count)
    let b = min(max(a, from + frames(endMs)), samples.count)
    return samples[a..<b]
  }

  func dominant(from: Int, _ startMs: Double, _ endMs: Double) -> Double {
    SignalMeasure.dominantFrequency(
      slice(from: from, startMs, endMs), sampleRate: rate, range: 200...4000, step: 5)
  }

  /// The two strongest frequencies (at least 100 Hz apart), strongest first.
  func twoStrongest(from: Int, _ startMs: Double, _ endMs: Double) -> (Double, Double) {
    let s = slice(from: from, startMs, endMs)
    let first = SignalMeasure.dominantFrequency(s, sampleRate: rate, range: 200...4000, step: 5)
    var best = 0.0
    var bestPower = -1.0
    for f in stride(from: 200.0, through: 4000, by: 5) where abs(f - first) >= 100 {
      let p = SignalMeasure.power(s, frequency: f, sampleRate: rate)
      if p > bestPower {
        bestPower = p
        best = f
      }
    }
    return (first, best)
  }

  /// The loudest 20 ms in the span, in dBFS: a level that a brief
  /// dropout (an underrun on a loaded machine) does not pull down.
  func peakLevel(from: Int, _ startMs: Double, _ endMs: Double) -> Double {
    var loudest = -Double.infinity
    var t = startMs
    while t + 20 <= endMs {
      loudest = max(loudest, SignalMeasure.dbfs(slice(from: from, t, t + 20)))
      t += 10
    }
    return loudest
  }

  /// First sample at or after `from` louder than -40 dBFS.
  func onset(after from: Int) -> Int? {
    SignalMeasure.onset(samples[min(max(0, from), samples.count)...], threshold: 0.01)
  }

  /// Last sample before `before` louder than -60 dBFS, if any after `from`.
  func lastSound(from: Int, before: Int) -> Int? {
    let lower = min(max(0, from), samples.count)
    let range = lower..<max(lower, min(before, samples.count))
    return samples[range].lastIndex { abs(Int($0)) >= 33 }
  }
}
