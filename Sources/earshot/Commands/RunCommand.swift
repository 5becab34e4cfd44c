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
  // Many clients need many descriptors: soft limit up to the hard one, and
  // the client cap fitted below it (beyond it clients get a clear refusal).
  let fileLimit = FileLimit.raiseToHard()
  options.maxClients = FileLimit.clientCap(
    configured: config.control.maxClients, softLimit: fileLimit)
  if options.maxClients < config.control.maxClients {
    Console.error(
      "earshot run: [control] max_clients = \(config.control.maxClients) lowered to \(options.maxClients): the open-file limit is \(fileLimit) (raise LimitNOFILE= or ulimit -Hn)\n"
    )
  }
  options.findPhone = config.findPhone
  let log: (String) -> Void = { Console.error("earshot run: \($0)\n") }
  // Everything serves on this loop: it is made first and handed to each part.
  let loop: EventLoop
  do { loop = try EventLoop() } catch { throw CommandFailure("\(error)") }
  // The ALSA alert player and mixer from [audio]. Without them (--no-audio)
  // find-phone rings silently and the volume commands answer "unavailable".
  let audio: (alert: ALSAAlertOutput, volume: ALSAVolumeControl?)?
  if args.has("no-audio") {
    audio = nil
  } else {
    do {
      audio = try DaemonAudio.make(
        config.audio, findPhoneSound: config.findPhone.sound, loop: loop, log: log)
    } catch {
      throw CommandFailure("\(error)")
    }
  }
  let daemon: Daemon
  do {
    daemon = try Daemon(
      loop: loop, options: options, version: version, alert: audio?.alert,
      volume: audio?.volume, log: log)
  } catch {
    throw CommandFailure("\(error)")
  }
  // The parts, in any order; scanning (or the replay) starts once all are in place.
  let monitor = try attachParts(to: daemon, config: config, replay: args.value("input") != nil)
  // [esphome]: the Home Assistant Bluetooth proxy, fed by the monitor's scanner.
  var proxy: ESPHomeProxy? = nil
  if config.esphome.enabled, let monitor {
    do {
      proxy = try ESPHomeProxy(
        loop: loop, config: config.esphome, hostname: MQTTBridge.Options.hostname(),
        version: version, log: log)
    } catch {
      throw CommandFailure("\(error)")
    }
    proxy?.attach(to: monitor)
    if let proxy { daemon.attach(esphome: proxy) }
    // mDNS through Avahi, where the system bus and avahi-daemon are.
    if let proxy, config.esphome.mdns, !config.esphome.bindsLoopback,
      let bus = try? DBusConnection(loop: loop)
    {
      proxy.announce(on: bus, log: log)
    }
  }
  try attachDeviceParts(
    to: daemon, config: config, audio: audio != nil, hasMixer: audio?.volume != nil,
    monitor: monitor)
  if let monitor {
    try start(monitor, config: config, input: args.value("input"), pacing: pacing, daemon: daemon)
  }
  // SIGHUP reloads the config (Daemon/ConfigReloader.swift).
  let reloader = ConfigReloader(
    path: args.value("config") ?? ConfigLocation.defaultPath(), config: config, daemon: daemon,
    paths: ConfigLocation.paths())
  try reloader.attach()
  try withExtendedLifetime((reloader, proxy)) { try daemon.run() }
  proxy?.shutdown()
  return 0
}

/// The proximity log, MQTT and the region monitor, as the config asks.
/// Returns the monitor, not yet started.
private func attachParts(to daemon: Daemon, config: Config, replay: Bool) throws -> AgentMonitor? {
  let log = daemon.log
  let writer = proximityLogWriter(
    config: config, path: nil, replay: replay, report: { log("proximity log: \($0)") })
  if let writer {
    daemon.attach(log: writer)
    // A replay's log is written at its end (capture time: no timer flushes
    // and no retention against today's date).
    if !replay { writer.attach(to: daemon.loop) }
  }
  var rooms: RoomsAgent? = nil
  if config.mqtt.enabled {
    do {
      let hostname = MQTTBridge.Options.hostname()
      let options = try MQTTBridge.Options(
        config: config.mqtt, hostname: hostname, version: version)
      let bridge = try MQTTBridge(loop: daemon.loop, settings: options)
      daemon.add(MQTTTransport(bridge: bridge, agent: daemon))
      // [rooms] track: sightings for the room aggregator (earshot rooms).
      if config.rooms.publishes {
        rooms = RoomsAgent(config: config, hostname: hostname, bridge: bridge)
      }
    } catch {
      throw CommandFailure("\(error)")
    }
  } else if config.rooms.publishes {
    throw CommandFailure(
      "[rooms] track needs [mqtt] host: sightings go to the aggregator through the broker")
  }
  // The Bluetooth proxy needs the scanner even with nothing to monitor.
  guard !config.regions.isEmpty || rooms != nil || config.esphome.enabled else {
    if replay {
      throw CommandFailure(
        "--input needs [region \"NAME\"]s, [rooms] track or [esphome] enabled in the config")
    }
    return nil
  }
  let driver: MonitorDriver
  do {
    driver = try MonitorDriver(
      config: config, emitRange: true,
      stateFile: replay ? nil : StateFile(path: config.state.path), runHooks: true,
      output: { _ in }, log: log)
  } catch {
    throw CommandFailure("\(error)")
  }
  rooms?.attach(to: driver)
  let monitor = AgentMonitor(loop: daemon.loop, driver: driver, proximityLog: writer)
  monitor.onAdapterState = { log($0.message) }
  daemon.attach(monitor: monitor)
  return monitor
}

/// Scans live, or replays `input` through the monitor (its log written at
/// the end, in capture time).
private func start(
  _ monitor: AgentMonitor, config: Config, input: String?, pacing: ReplayPacing?, daemon: Daemon
) throws {
  if let input, let pacing {
    do {
      try monitor.replay(path: input, pace: pacing.pace, startAt: pacing.startAt) { error in
        monitor.proximityLog?.close()
        daemon.log(error.map { "replay stopped: \($0)" } ?? "replayed \(input)")
      }
    } catch let e as ReplayError {
      throw CommandFailure(e.description)
    }
    return
  }
  if let input {
    do { try monitor.replay(path: input) } catch let e as ReplayError {
      throw CommandFailure(e.description)
    }
    monitor.proximityLog?.close()
    daemon.log("replayed \(input)")
    return
  }
  // Regions (or rooms) naming devices: the bonded devices' keys, followed while running.
  if config.regions.contains(where: { !$0.devices.isEmpty })
    || config.rooms.trackDevices.contains(where: { $0.address != nil })
  {
    try daemon.follow(bondedKeys: BondedKeysSource.forAgent())
  }
  do {
    try monitor.startLive(
      options: LiveScanOptions(config: config.scanner),
      schedule: ScanScheduleSettings(policy: config.scanner.duty), waitForAdapter: true, reapOnSignal: true)
  } catch let e as ScanError {
    throw CommandFailure(e.description)
  }
  followSleep(monitor)
}
