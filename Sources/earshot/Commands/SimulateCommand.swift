import EarshotCore
import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

let simulateCommand = Command(
  name: "simulate",
  summary: "Write a synthetic btsnoop capture (for demos, tests and benchmarks)",
  arguments: "busy-room|scenario|house|radio",
  details: """
    busy-room: reports from 64 advertisers, one in four an iBeacon
    (UUID 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182, major 1, minors 0-7), one
    report per millisecond.

    scenario: beacons and devices described in --spec FILE (see
    scenarios/office.scenario and scenarios/identity.scenario): advertising
    interval, loss, distance over time, presence intervals, address changes;
    a device with a key sends from resolvable private addresses that rotate.
    --truth writes the ground truth as JSON lines
    ({"beacon":"desk","from":T,"to":T}, {"device":"phone",...}, Unix seconds).

    house: a floor plan in --spec FILE (see scenarios/house.spec): rooms,
    receivers (position, RSSI bias, loss), wall loss, shadowing and beacons
    that stand or walk. --write DIR gets DIR/RECEIVER.btsnoop per receiver (one
    timeline, each starting with a record at the spec's start) and
    DIR/truth.jsonl, each beacon's room over time
    ({"t":T,"beacon":"UUID:MAJOR:MINOR","name":"walker","room":"kitchen"};
    "room":null when absent or outside every room).

    radio: the closed loop of region monitor, scan scheduler and a radio
    that hears only in the scan windows (each advertising event on channels
    37, 38 and 39 after a 0-10 ms advDelay, one channel per scan interval,
    loss per PDU), on a house of --fast iBeacons at 100 ms, --slow at 1 s
    and --phones phones (200 ms-1 s, 20-60 s silences while locked), 30 %
    loss, each coming and going, for --hours. Prints the mean duty, exits,
    enters and false exits on battery, on mains, at full duty, and as
    before the scheduler ("today": full duty, no name requests). --write
    DIR gets two captures of the battery run: DIR/air.pcap, a sniffer's
    capture (link type 256, with each PDU's channel) of every PDU that
    reached the air unlost, and DIR/scan.btsnoop, the scheduler's HCI
    commands with their times and a report for every PDU the controller
    heard; the air of one simulated hour is about 11 MB.
    """,
  options: [
    .value(
      "write", "FILE",
      "Where to write the capture, or the directory for house and radio (required but for radio)"),
    .value("reports", "N", "How many reports (busy-room; default 2000)"),
    .value("spec", "FILE", "Scenario description (scenario)"),
    .value(
      "config", "FILE",
      "The agent's config, whose [layout] formats a scenario's id may name (scenario)"),
    .value("truth", "FILE", "Where to write the scenario's ground truth"),
    .value("hours", "H", "Simulated hours (radio; default 24)"),
    .value("seed", "N", "Random seed (radio; default 1)"),
    .value("fast", "N", "iBeacons at 100 ms (radio; default 4)"),
    .value("slow", "N", "iBeacons at 1 s (radio; default 2)"),
    .value("phones", "N", "Phones (radio; default 2)"),
    .value("format", "text|json", "Output (radio; default text)"),
    .value(
      "battery-allowance", "SPANS[:MAX]",
      "How late an auto exit may come on battery, in confirm spans, at most MAX s (radio; default 1.75:16)"
    ),
    .value(
      "mains-allowance", "SPANS[:MAX]",
      "The same on mains (radio; default 0.75:14)"),
  ],
  run: runSimulate)

func runSimulate(_ args: Arguments) throws -> Int32 {
  if args.positionals == ["radio"] { return try runSimulateRadio(args) }
  guard let path = args.value("write") else { throw UsageError("--write FILE is required") }
  if args.positionals == ["scenario"] { return try runScenario(args, path: path) }
  if args.positionals == ["house"] { return try runHouse(args, directory: path) }
  guard args.positionals == ["busy-room"] else {
    throw UsageError("name what to simulate: busy-room, scenario or house")
  }
  guard let n = Int(args.value("reports") ?? "2000"), n > 0 else {
    throw UsageError("--reports expects a positive integer")
  }
  let sink = try FileSink(creating: path)
  try sink.write(SyntheticCapture.busyRoom(reports: n).bytes)
  try sink.flush()
  return 0
}

func runScenario(_ args: Arguments, path: String) throws -> Int32 {
  guard let spec = args.value("spec") else { throw UsageError("scenario needs --spec FILE") }
  // Its layouts become kinds a beacon's `id = NAME:…` may name.
  if args.value("config") != nil { _ = try loadConfig(args).0.trackedLayouts }
  let scenario: Scenario
  do {
    scenario = try Scenario.build(try IniReader.read(path: spec))
  } catch let e as ConfigErrors {
    throw CommandFailure("problems in the scenario:\n\(e.description)")
  }
  let sink = try FileSink(creating: path)
  try sink.write(scenario.capture(cipher: LibcryptoAES()).bytes)
  try sink.flush()
  if let truth = args.value("truth") {
    let out = try FileSink(creating: truth)
    for b in scenario.beacons {
      for p in b.present {
        var j = JSONLine()
        j.add("beacon", b.name)
        j.addRaw("from", ReportFormatter.seconds(scenario.micros(p.lowerBound)))
        j.addRaw("to", ReportFormatter.seconds(scenario.micros(p.upperBound)))
        try out.write(Array((j.line + "\n").utf8))
      }
    }
    for d in scenario.devices {
      for p in d.present {
        var j = JSONLine()
        j.add("device", d.name)
        j.addRaw("from", ReportFormatter.seconds(scenario.micros(p.lowerBound)))
        j.addRaw("to", ReportFormatter.seconds(scenario.micros(p.upperBound)))
        try out.write(Array((j.line + "\n").utf8))
      }
    }
    for d in scenario.adapterDown {
      var j = JSONLine()
      j.add("adapter", "down")
      j.addRaw("from", ReportFormatter.seconds(scenario.micros(d.lowerBound)))
      j.addRaw("to", ReportFormatter.seconds(scenario.micros(d.upperBound)))
      try out.write(Array((j.line + "\n").utf8))
    }
    try out.flush()
  }
  return 0
}

/// Creates `directory` unless it is there.
func makeDirectory(_ directory: String) throws {
  if mkdir(directory, 0o755) != 0 && errno != EEXIST {
    throw CommandFailure("cannot create \(directory): \(String(cString: strerror(errno)))")
  }
}

func runHouse(_ args: Arguments, directory: String) throws -> Int32 {
  guard let spec = args.value("spec") else { throw UsageError("house needs --spec FILE") }
  let house: House
  do {
    house = try House.build(try IniReader.read(path: spec))
  } catch let e as ConfigErrors {
    throw CommandFailure("problems in the house:\n\(e.description)")
  }
  try makeDirectory(directory)
  let sinks = try house.receivers.map { try FileSink(creating: "\(directory)/\($0.name).btsnoop") }
  for sink in sinks { try sink.write(HouseCapture.header(house)) }
  var failure: Error?
  house.reports { r in
    guard failure == nil else { return }
    do { try sinks[r.receiver].write(HouseCapture.record(house, r)) } catch { failure = error }
  }
  if let failure { throw failure }
  for sink in sinks { try sink.flush() }
  let truth = try FileSink(creating: "\(directory)/truth.jsonl")
  for line in HouseCapture.truthLines(house) { try truth.write(Array((line + "\n").utf8)) }
  try truth.flush()
  return 0
}
