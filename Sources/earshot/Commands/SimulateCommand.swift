import EarshotCore
import EarshotLinux

let simulateCommand = Command(
  name: "simulate",
  summary: "Write a synthetic btsnoop capture (for demos, tests and benchmarks)",
  arguments: "busy-room",
  details: """
    busy-room: reports from 64 advertisers, one in four an iBeacon
    (UUID 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182, major 1, minors 0-7), one
    report per millisecond.
    """,
  options: [
    .value("write", "FILE", "Where to write the capture (required)"),
    .value("reports", "N", "How many reports (default 2000)"),
  ],
  run: runSimulate)

func runSimulate(_ args: Arguments) throws -> Int32 {
  guard let path = args.value("write") else { throw UsageError("--write FILE is required") }
  guard args.positionals == ["busy-room"] else { throw UsageError("name a scenario: busy-room") }
  guard let n = Int(args.value("reports") ?? "2000"), n > 0 else {
    throw UsageError("--reports expects a positive integer")
  }
  let sink = try FileSink(creating: path)
  try sink.write(SyntheticCapture.busyRoom(reports: n).bytes)
  try sink.flush()
  return 0
}
