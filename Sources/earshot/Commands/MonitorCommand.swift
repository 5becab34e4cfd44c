import EarshotCore
import EarshotLinux

let monitorCommand = Command(
  name: "monitor",
  summary: "Monitor beacon regions: print enter, exit, state and range events",
  details: """
    Prints one JSON line per event:
      {"t":1767225630.10,"event":"enter","region":"desk","state":"inside"}
    event is state (a region's state became known, or unknown), enter, exit,
    or range (once per [ranging] interval per region with beacons inside,
    nearest first). Runs the regions' on_enter/on_exit hooks.

    With --input, replays a capture: time is the capture's, timers fire as
    capture time passes, timers due by the last timestamp fire at the end,
    then it exits (no waiting); --pace N replays at N times capture time
    (1 = real time) instead, --start-at T from Unix time T. Without --input it scans live ([scanner]);
    adapter changes go to stderr, and while the adapter is down or gone the
    regions are unknown (no exits) until it is back. SIGINT/SIGTERM stop it,
    restoring the scan and saving the region states.

    With --radio battery|mains, the replay is heard through a simulated
    radio: the scan scheduler picks the settings from what the regions need
    ([scanner] duty, on that power source), and only what a scanner with
    those settings hears goes to the monitor (a sniffer's PDU if it came on
    the channel listened to then, an HCI report whenever a window is open);
    at capture speed, not with --pace. --radio-write FILE writes the
    scheduler's HCI commands with their times and every report heard as
    btsnoop (docs/scanning.md).

    With --log FILE (or [log] enabled = true) the events also go to the
    proximity log: region events, one sighting row per beacon per [log]
    interval from the range events, adapter up/down.
    """,
  options: [
    .value("config", "FILE", "Config file (default /etc/earshot/earshot.conf)"),
    .value("input", "FILE", "Replay a capture (btsnoop, pcap, pcapng) instead of scanning"),
    paceOption,
    startAtOption,
    .value("radio", "battery|mains", "Replay through a simulated radio on this power source"),
    .value("radio-write", "FILE", "With --radio: write its commands and heard reports (btsnoop)"),
    .flag("no-range", "Leave out range lines"),
    .value("state", "FILE", "State file (default: [state] path live; none when replaying)"),
    .flag("no-hooks", "Do not run on_enter/on_exit hooks"),
    .value(
      "log", "FILE",
      "Write the proximity log (SQLite) to FILE (default: [log] path when [log] enabled)"),
  ],
  run: runMonitor)

func runMonitor(_ args: Arguments) throws -> Int32 {
  guard args.positionals.isEmpty else {
    throw UsageError("unexpected argument '\(args.positionals[0])'")
  }
  let pacing = try ReplayPacing(args)
  let (config, path) = try loadConfig(args)
  guard !config.regions.isEmpty else {
    throw CommandFailure("\(path) defines no [region \"NAME\"]; there is nothing to monitor")
  }
  let input = args.value("input")
  let statePath = args.value("state") ?? (input == nil ? config.state.path : nil)
  let driver: MonitorDriver
  do {
    driver = try MonitorDriver(
      config: config, emitRange: !args.has("no-range"),
      stateFile: statePath.map { StateFile(path: $0) }, runHooks: !args.has("no-hooks"),
      output: { _ in }, log: { Console.error("earshot monitor: \($0)\n") })
  } catch {
    throw CommandFailure("\(error)")
  }
  let writer = ProximityLogWriter.forMonitor(
    config: config, path: args.value("log"), replay: input != nil,
    report: { Console.error("earshot monitor: proximity log: \($0)\n") })
  let agent = AgentMonitor(loop: try EventLoop(), driver: driver, proximityLog: writer)
  if args.value("radio-write") != nil && args.value("radio") == nil {
    throw UsageError("--radio-write needs --radio battery|mains")
  }
  let radioWrite = try args.value("radio-write").map { try FileSink(creating: $0) }
  var radioWriteError: (any Error)?
  if let power = args.value("radio") {
    guard input != nil else { throw UsageError("--radio needs --input CAPTURE") }
    guard pacing == nil else {
      throw UsageError("--radio replays at capture speed; leave out --pace and --start-at")
    }
    guard let source = PowerSupply(rawValue: power) else {
      throw UsageError("--radio expects battery or mains, not '\(power)'")
    }
    agent.replayRadio = ReplayRadio(
      settings: ScanScheduleSettings(policy: config.scanner.duty), power: source,
      sink: radioWrite.map { file in
        { bytes in
          do { try file.write(bytes) } catch { radioWriteError = radioWriteError ?? error }
        }
      })
  }
  agent.observe { Console.line(MonitorEventFormatter.json($0)) }
  guard let input else {
    Console.lineBuffered = true
    return try runLiveMonitor(config: config, agent: agent)
  }
  do {
    if let pacing {
      // Lines go out as they happen.
      Console.lineBuffered = true
      var failure: ReplayError?
      try agent.replay(path: input, pace: pacing.pace, startAt: pacing.startAt) {
        failure = $0
        agent.loop.stop()
      }
      try agent.loop.run()
      if let failure { throw failure }
    } else {
      try agent.replay(path: input)
    }
  } catch let e as ReplayError {
    throw CommandFailure(e.description)
  }
  Console.flush()
  driver.finish()
  if var radio = agent.replayRadio {
    radio.finish()
    Console.error(
      "earshot monitor: simulated radio heard \(radio.heard) of "
        + "\(radio.heard + radio.missed) advertising records\n")
    if let radioWriteError { throw CommandFailure("--radio-write: \(radioWriteError)") }
    try radioWrite?.flush()
  }
  if let writer, !writer.close() {
    throw CommandFailure(
      "the proximity log \(writer.settings.path) could not be written: "
        + (writer.stats.lastError ?? "unknown error"))
  }
  return 0
}
