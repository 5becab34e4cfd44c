import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// What `earshot play`, `pause` and `stop` share: the config, and reaching
/// the player: the running agent's (over the control socket) when one
/// answers, else the MPRIS player of [media] player.
/// The config for commands that also work without one: --config if given,
/// else the default file if it exists, else the defaults.
func loadConfigOrDefaults(_ args: Arguments) throws -> Config {
  if args.value("config") == nil && access(ConfigLocation.defaultPath(), F_OK) != 0 {
    return Config(paths: ConfigLocation.paths())
  }
  return try loadConfig(args).0
}

enum MediaCLI {
  static let configOption = Option.value(
    "config", "FILE",
    "Config file (default: ~/.config/earshot/earshot.conf, then /etc/earshot/earshot.conf)")

  static func settings(_ args: Arguments) throws -> MediaConfig {
    var s = try loadConfigOrDefaults(args).media
    for key in MediaConfig.keys {
      guard let v = args.values[key.name] else { continue }
      do { try s.set(key.name, v) } catch { throw UsageError("--\(key.name): \(error)") }
    }
    return s
  }

  /// Pause, resume or stop through the running agent, or else the MPRIS
  /// player in [media] player.
  static func control(_ args: Arguments, command: ControlCommand) throws
    -> Int32
  {
    if let agent = runningAgent(args) {
      do {
        Console.line(try resultFields(agent.call(command)).encoded)
      } catch let e as ControlClient.Failure {
        throw CommandFailure(e.description)
      }
      return 0
    }
    let settings = try settings(args)
    guard let bus = settings.player else {
      throw CommandFailure(
        "no earshot agent is running (\(socketPath(args))) and [media] player is not set: start 'earshot run' to play, pause and stop through it; a standalone 'earshot play' stops with Ctrl-C"
      )
    }
    let loop = try EventLoop()
    let player = MprisPlayer(busName: bus, timeout: settings.timeout, loop: loop)
    var outcome: MprisPlayer.Outcome = .ok
    let done: (MprisPlayer.Outcome) -> Void = {
      outcome = $0
      loop.stop()
    }
    // MPRIS's Pause, Play (which resumes) and Stop.
    switch command {
    case .mediaPause: player.pause(done: done)
    case .mediaResume: player.play(done: done)
    default: player.stop(done: done)
    }
    try loop.run()
    if case .failed(_, let why) = outcome { throw CommandFailure(why) }
    return 0
  }
}
