import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let runCommand = Command(
  name: "run",
  summary:
    "Run the agent: region monitoring, the control socket, find-phone, the BLE link, shutter, media, MQTT, the log",
  details: """
    Serves the control socket (JSON lines; see docs/control-protocol.md) until SIGINT or
    SIGTERM. SIGHUP reloads the config: a file with errors is refused (the
    running config stays; the log says why), a good one applies its regions,
    [ranging], [monitor] and [find-phone] at once (docs/faults.md lists the
    keys that need a restart). The socket is mode 0660; root, this user and the configured group
    may connect. If a saved volume was left behind by an interrupted alert, it is
    restored first.

    With [region "NAME"]s in the config it monitors them on the live scanner
    ([scanner]; a missing or powered-off adapter is waited for, regions
    unknown meanwhile): status shows the states and ranged beacons, and
    subscribers get region and ranging events. [log] enabled = true writes the
    proximity log; [mqtt] host set bridges to MQTT (Home Assistant discovery).
    [link] enabled = true serves the BLE device link through bluetoothd.
    [esphome] enabled = true makes the agent a Home Assistant Bluetooth proxy
    (the ESPHome native API; docs/esphome-proxy.md) on the same scanner.
    Device requests (socket, BLE, MQTT) go through one find-phone
    coordinator and mixer; shutter events drive [shutter]'s camera and play
    requests the [media] library (paused while find-phone rings).

    --input CAPTURE replays a capture through the monitor instead of scanning
    (capture time, as fast as it reads; no state file), then keeps serving
    with the states it ended in: for tests and demos without Bluetooth.
    --pace N plays it at N times capture time (1 = real time) while serving,
    so several agents and `earshot rooms` can run in step on one broker;
    --start-at T plays its first record at Unix time T (default: at once).
    """,
  options: [
    .value(
      "config", "FILE", "Config file (default: the user's or /etc/earshot/earshot.conf if present)"),
    socketOption,
    .flag(
      "no-audio", "Do not open ALSA: find-phone rings silently, volume commands are unavailable"),
    .value(
      "state-dir", "DIR",
      "Where the volume is saved while ringing (default: the directory of [state] path)"),
    .value(
      "input", "CAPTURE",
      "Replay a capture (btsnoop, pcap, pcapng) through the monitor, then keep serving"),
    paceOption,
    startAtOption,
  ],
  run: runDaemon)

func runDaemon(_ args: Arguments) throws -> Int32 {
  try noPositionals(args)
  let pacing = try ReplayPacing(args)
  // An explicit --config must load; without one, a config file is optional.
  let config: Config
  if args.value("config") != nil || access(ConfigLocation.defaultPath(), F_OK) == 0 {
    config = try loadConfig(args).0
  } else {
    config = Config(paths: ConfigLocation.paths())
  }
  // Everything else is the agent's, built from the config (Agent/Agent.swift).
  var surroundings = AgentSurroundings(
    version: version,
    reports: args.value("input").map {
      CaptureReports(path: $0, pace: pacing?.pace, startAt: pacing?.startAt)
    } ?? LiveReports(),
    audio: args.has("no-audio") ? .silent : .alsa,
    log: { Console.error("earshot run: \($0)\n") })
  surroundings.socketPath = args.value("socket")
  surroundings.stateDirectory = args.value("state-dir")
  surroundings.configFile = (
    args.value("config") ?? ConfigLocation.defaultPath(), ConfigLocation.paths()
  )
  do {
    let agent = try Agent(config: config, surroundings: surroundings)
    try agent.run()
  } catch let e as AgentError {
    throw CommandFailure(e.description)
  }
  return 0
}
