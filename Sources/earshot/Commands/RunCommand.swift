import EarshotCore
import EarshotLinux

let runCommand = Command(
  name: "run",
  summary: "Run the agent: the control socket and find-phone (monitoring joins later)",
  details: """
    Serves the control socket (JSON lines; see the README) until SIGINT or
    SIGTERM. The socket is mode 0660; root, this user and the configured group
    may connect. If a saved volume was left behind by an interrupted alert, it is
    restored first.
    """,
  options: [
    socketOption,
    .value(
      "state-dir", "DIR",
      "Where the volume is saved while ringing (default: /var/lib/earshot for root, $XDG_STATE_HOME/earshot otherwise)"
    ),
    // The config file (`--config FILE`: [control], [find-phone]) comes with the
    // config work; its values go into Daemon.Options below.
  ],
  run: runDaemon)

func runDaemon(_ args: Arguments) throws -> Int32 {
  try noPositionals(args)
  var options = Daemon.Options(
    socketPath: socketPath(args),
    stateDirectory: args.value("state-dir") ?? SocketPath.defaultStateDirectory())
  options.findPhone = FindPhoneSettings()
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
