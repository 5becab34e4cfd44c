import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let runCommand = Command(
  name: "run",
  summary:
    "Run the agent: the control socket and find-phone (monitoring joins with the live scanner)",
  details: """
    Serves the control socket (JSON lines; see the README) until SIGINT or
    SIGTERM. The socket is mode 0660; root, this user and the configured group
    may connect. If a saved volume was left behind by an interrupted alert, it is
    restored first.
    """,
  options: [
    .value(
      "config", "FILE", "Config file (default: the user's or /etc/earshot/earshot.conf if present)"),
    socketOption,
    .value(
      "state-dir", "DIR",
      "Where the volume is saved while ringing (default: the directory of [state] path)"),
  ],
  run: runDaemon)

func runDaemon(_ args: Arguments) throws -> Int32 {
  try noPositionals(args)
  // An explicit --config must load; without one, a config file is optional.
  let config: Config
  if args.value("config") != nil || access(ConfigLocation.defaultPath(), F_OK) == 0 {
    config = try loadConfig(args).0
  } else {
    config = Config(paths: ConfigLocation.paths())
  }
  let statePath = config.state.path
  let stateDir =
    statePath.lastIndex(of: "/").map { String(statePath[..<$0]) }
    ?? SocketPath.defaultStateDirectory()
  var options = Daemon.Options(
    socketPath: args.value("socket") ?? config.control.socket,
    stateDirectory: args.value("state-dir") ?? (stateDir.isEmpty ? "/" : stateDir))
  if let name = config.control.group {
    guard let group = getgrnam(name) else {
      throw CommandFailure("[control] group '\(name)' does not exist; create it or remove the key")
    }
    options.allowedGroup = group.pointee.gr_gid
  }
  options.findPhone = FindPhoneSettings(
    volume: config.findPhone.volume, headphoneVolume: config.findPhone.headphoneVolume,
    timeoutSeconds: config.findPhone.timeout)
  // The ALSA alert player and mixer (the audio work) plug in here as
  // `alert:` and `volume:`; until then find-phone rings silently and the
  // volume commands answer "unavailable".
  let daemon: Daemon
  do {
    daemon = try Daemon(options: options, version: version, alert: nil, volume: nil)
  } catch {
    throw CommandFailure("\(error)")
  }
  try daemon.run()
  return 0
}
