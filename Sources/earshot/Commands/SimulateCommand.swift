import EarshotCore
import EarshotLinux

let simulateCommand = Command(
  name: "simulate",
  summary: "Write a synthetic btsnoop capture (for demos, tests and benchmarks)",
  arguments: "busy-room|scenario",
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
    """,
  options: [
    .value("write", "FILE", "Where to write the capture (required)"),
    .value("reports", "N", "How many reports (busy-room; default 2000)"),
    .value("spec", "FILE", "Scenario description (scenario)"),
    .value("truth", "FILE", "Where to write the scenario's ground truth"),
  ],
  run: runSimulate)

func runSimulate(_ args: Arguments) throws -> Int32 {
  guard let path = args.value("write") else { throw UsageError("--write FILE is required") }
  if args.positionals == ["scenario"] { return try runScenario(args, path: path) }
  guard args.positionals == ["busy-room"] else {
    throw UsageError("name what to simulate: busy-room or scenario")
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
