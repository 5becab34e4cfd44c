import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// What `earshot play`, `pause` and `stop` share until the daemon owns
/// playback: the config, and the pid file through which `pause` and `stop`
/// reach a running `earshot play` (SIGUSR1 pause, SIGUSR2 resume, SIGTERM
/// stop).
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

  static func settings(_ args: Arguments) throws -> MediaSettings {
    var s = try loadConfigOrDefaults(args).media
    do {
      for key in MediaSettings.keys {
        if let v = args.values[key] { try s.set(key, v) }
      }
    } catch {
      throw UsageError("--\(error)")
    }
    return s
  }

  static var pidFile: String {
    if let p = Environment.get("EARSHOT_PLAY_PIDFILE"), !p.isEmpty { return p }
    if let r = Environment.get("XDG_RUNTIME_DIR"), !r.isEmpty { return r + "/earshot-play.pid" }
    return "/tmp/earshot-play-\(getuid()).pid"
  }

  /// The running `earshot play`, if any.
  static func runningPlayer() -> pid_t? {
    guard let bytes = try? FileBytes(path: pidFile).bytes,
      let pid = pid_t(String(decoding: bytes, as: UTF8.self).trimmingCharacters()), pid > 0,
      kill(pid, 0) == 0
    else { return nil }
    return pid
  }

  /// Sends `signal` to the running `earshot play`, or an MPRIS method to
  /// the configured player.
  static func control(_ args: Arguments, signal: Int32, mprisMethod: String) throws -> Int32 {
    let settings = try settings(args)
    if let bus = settings.player {
      let loop = try EventLoop()
      let player = MprisPlayer(busName: bus, timeout: settings.timeout, loop: loop)
      var outcome: MprisPlayer.Outcome = .ok
      let done: (MprisPlayer.Outcome) -> Void = {
        outcome = $0
        loop.stop()
      }
      switch mprisMethod {
      case "Pause": player.pause(done: done)
      case "Play": player.play(done: done)
      default: player.stop(done: done)
      }
      try loop.run()
      if case .failed(_, let why) = outcome { throw CommandFailure(why) }
      return 0
    }
    guard let pid = runningPlayer() else {
      throw CommandFailure("nothing is playing (no running 'earshot play'; pid file \(pidFile))")
    }
    guard kill(pid, signal) == 0 else {
      throw CommandFailure(
        "cannot signal earshot play (pid \(pid)): \(String(cString: strerror(errno)))")
    }
    return 0
  }
}
