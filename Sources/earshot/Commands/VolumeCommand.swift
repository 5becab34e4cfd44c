import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let volumeCommand = Command(
  name: "volume",
  summary: "Show or set the output volume and mute (JSON)",
  arguments: "[set VALUE | mute | unmute | watch]",
  details: """
    With no argument, prints the volume on the scale alsamixer shows and the
    mute state: {"volume":0.37,"muted":false}.
      set VALUE   0.37 or 37% sets it; +5% or -5% steps it (clamped to 0…1).
                  Setting a volume also unmutes.
      mute, unmute
      watch       prints the current state, then one line per change made by
                  anyone (amixer, pactl, a desktop applet) until Ctrl-C.
    Each action prints the resulting state.

    When an agent ('earshot run') answers on the control socket, the
    command goes through it (its mixer; refused while find-phone rings), so
    its subscribers and devices hear of the change. Otherwise, or with
    --card or --control, it acts on the ALSA mixer directly.
    """,
  options: [
    .value("card", "CARD", "Mixer card: default, pulse, hw:0 or a card number (default: default)"),
    .value("control", "NAME", "Mixer control, e.g. Master, PCM, Speaker (default: Master)"),
    socketOption,
  ],
  run: runVolume)

func runVolume(_ args: Arguments) throws -> Int32 {
  let action = args.positionals.first ?? "get"
  let extra = Array(args.positionals.dropFirst())
  switch (action, extra.count) {
  case ("get", 0), ("set", 1), ("mute", 0), ("unmute", 0), ("watch", 0): break
  case ("set", _): throw UsageError("set takes one value: 0.37, 37%, +5% or -5%")
  case ("get", _), ("mute", _), ("unmute", _), ("watch", _):
    throw UsageError("\(action) takes no value")
  default: throw UsageError("unknown action '\(action)': use set, mute, unmute or watch")
  }
  var change: VolumeChange? = nil
  if action == "set" {
    guard let c = VolumeChange.parse(extra[0]) else {
      throw UsageError("'\(extra[0])' is not a volume: use 0…1, 0%…100%, or a step like +5% or -5%")
    }
    change = c
  }
  if args.value("card") == nil, args.value("control") == nil, let agent = runningAgent(args) {
    return try volumeThroughAgent(agent, action: action, change: change)
  }
  let mixer: Mixer
  do {
    mixer = try Mixer(
      card: args.value("card") ?? "default", control: args.value("control") ?? "Master")
  } catch let e as Mixer.Failure {
    throw CommandFailure(e.description)
  }
  do {
    switch action {
    case "set":
      let current = mixer.state().volume
      let s = try mixer.setVolume(
        change!.applied(to: current), rounding: change!.rounding(from: current))
      Console.line(s.jsonLine)
    case "mute": Console.line(try mixer.setMuted(true).jsonLine)
    case "unmute": Console.line(try mixer.setMuted(false).jsonLine)
    case "watch": try watchVolume(mixer)
    default: Console.line(mixer.state().jsonLine)
    }
  } catch let e as Mixer.Failure {
    throw CommandFailure(e.description)
  }
  return 0
}

private func watchVolume(_ mixer: Mixer) throws {
  let loop = try EventLoop()
  try loop.handleSignals([SIGINT, SIGTERM]) { _ in loop.stop() }
  Console.lineBuffered = true
  Console.line(mixer.remember(mixer.state()).jsonLine)
  var failure: Error? = nil
  var settle: EventLoop.TimerID? = nil
  try loop.watch(pollDescriptors: mixer.pollDescriptors()) { fds in
    do {
      if let s = try mixer.handleReady(fds) { Console.line(s.jsonLine) }
      // Read again 150 ms after the last event (see `Mixer.recheck`).
      if let settle { loop.cancel(settle) }
      settle = loop.after(seconds: 0.15) {
        settle = nil
        if let s = mixer.recheck() { Console.line(s.jsonLine) }
      }
    } catch {
      failure = error
      loop.stop()
    }
  }
  try loop.run()
  if let failure { throw failure }
}

/// The same actions through the running agent's mixer.
private func volumeThroughAgent(_ agent: ControlClient, action: String, change: VolumeChange?)
  throws -> Int32
{
  func state(_ response: JSONValue) throws -> VolumeState {
    let v = try resultFields(response)["volume"]
    guard let level = v?["level"]?.number, let muted = v?["muted"]?.bool else {
      throw CommandFailure("the agent has no volume to report")
    }
    return VolumeState(volume: level, muted: muted)
  }
  do {
    switch action {
    case "set":
      let current = try state(agent.call(.volumeGet)).volume
      let level = min(max(change!.applied(to: current), 0), 1)
      Console.line(try state(agent.call(.volumeSet(level))).jsonLine)
    case "mute": Console.line(try state(agent.call(.volumeMute)).jsonLine)
    case "unmute": Console.line(try state(agent.call(.volumeUnmute)).jsonLine)
    case "watch":
      Console.lineBuffered = true
      Console.line(try state(agent.call(.volumeGet)).jsonLine)
      _ = try resultFields(agent.call(.subscribe([.volume])))
      while let event = try agent.nextEvent() {
        guard event["event"]?.string == "volume", let v = event["volume"],
          let level = v["level"]?.number, let muted = v["muted"]?.bool
        else { continue }
        Console.line(VolumeState(volume: level, muted: muted).jsonLine)
      }
      throw CommandFailure("the agent stopped")
    default: Console.line(try state(agent.call(.volumeGet)).jsonLine)
    }
  } catch let e as ControlClient.Failure {
    throw CommandFailure(e.description)
  }
  return 0
}
