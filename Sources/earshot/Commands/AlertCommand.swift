import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let alertCommand = Command(
  name: "alert",
  summary: "Play an alert sound until Ctrl-C or for a duration",
  details: """
    Plays a built-in pattern (ring, chirp, beep; see 'earshot sounds') or a
    sound file, looping, on an ALSA device. Ctrl-C (SIGINT) or SIGTERM stops
    it at once (the queued audio is dropped, not drained).
    Prints one JSON line when it starts ({"event":"playing",...}, with the
    device used and the time to the first write) and one when it stops.
    """,
  options: [
    .value(
      "sound", "NAME|FILE", "Pattern name, file in the sounds directory, or a path (default: ring)"),
    .value("frequency", "HZ", "Base frequency of a pattern (ring 800, chirp 1000, beep 1000)"),
    .value("ramp", "S", "Rise from -30 dB to full over S seconds, then hold (default: none)"),
    .value("duration", "S", "Stop after S seconds (default: until Ctrl-C)"),
    .value("device", "PCM", "ALSA PCM device (default: default)"),
    .value("buffer", "MS", "ALSA buffer length; a period is a quarter of it (default: 40)"),
    .value(
      "fallback", "PCMS",
      "Devices to try in order if it fails to open or mid-alert, space-separated, e.g. 'plughw:0,0'"
    ),
  ],
  run: runAlert)

func runAlert(_ args: Arguments) throws -> Int32 {
  guard args.positionals.isEmpty else {
    throw UsageError("unexpected '\(args.positionals[0])'; name the sound with --sound")
  }
  let frequency = try args.double("frequency")
  if let f = frequency, !SoundPattern.frequencyRange.contains(f) {
    throw UsageError("--frequency must be within 50…8000 Hz")
  }
  let ramp = try args.double("ramp")
  if let r = ramp, r < 0 || r > 600 { throw UsageError("--ramp must be within 0…600 seconds") }
  let duration = try args.double("duration")
  if let d = duration, d <= 0 || d > 86_400 {
    throw UsageError("--duration must be within 0…86400 seconds")
  }
  let name = args.value("sound") ?? "ring"
  let sound: AlertSound
  do {
    sound = try SoundLibrary.standard().resolve(name, frequency: frequency)
  } catch {
    throw CommandFailure("\(error)")
  }
  if frequency != nil, case .samples = sound {
    throw UsageError("--frequency applies to the built-in patterns, not to a sound file")
  }
  let buffer = try args.double("buffer") ?? 40
  guard (8...2000).contains(buffer) else { throw UsageError("--buffer must be within 8…2000 ms") }
  let fallbacks = (args.value("fallback") ?? "").split(separator: " ").map(String.init)
  let player = AlertPlayer(
    settings: .init(
      device: args.value("device") ?? "default", fallbacks: fallbacks,
      bufferMicros: Int(buffer * 1000)))
  let loop = try EventLoop()
  var reason = "signal"
  try loop.handleSignals([SIGINT, SIGTERM]) { _ in loop.stop() }
  Console.lineBuffered = true
  // The agent's output: a device that fails mid-alert hands over to the
  // next of --fallback, and the notes say so on stderr.
  let output = ALSAAlertOutput(
    player: player, sound: sound, ramp: ramp.map { GainRamp(seconds: $0) }, loop: loop,
    log: { Console.error("earshot alert: \($0)\n") })
  var failure: String? = nil
  output.onFailure = { why in
    failure = why
    loop.stop()
  }
  let began = Clock.monotonicNanos()
  do {
    try output.startAlert()
  } catch {
    throw CommandFailure("\(error)")
  }
  var line = JSONLine()
  line.add("event", "playing")
  line.add("device", player.device ?? "")
  line.add("sound", sound.name)
  line.add("start_ms", Double(player.startLatencyNanos) / 1e6, decimals: 1)
  line.add("period_frames", player.periodFrames)
  line.add("buffer_frames", player.bufferFrames)
  Console.line(line.line)

  if let duration {
    loop.at(MonotonicTime(nanos: began).adding(seconds: duration)) {
      reason = "duration"
      loop.stop()
    }
  }
  try loop.run()
  if let failure { throw CommandFailure(failure) }
  let played = Double(Clock.monotonicNanos() - began) / 1e9
  output.stopAlert()
  var end = JSONLine()
  end.add("event", "stopped")
  end.add("reason", reason)
  end.add("seconds", played, decimals: 3)
  end.add("recoveries", player.recoveries)
  Console.line(end.line)
  return 0
}
