import EarshotCore
import EarshotLinux

let benchCommand = Command(
  name: "bench",
  summary: "Measure decoding speed and print reports per second",
  details: """
    Decodes a capture (by default a synthetic busy-room capture of 200,000
    reports, a quarter of them iBeacons) repeatedly for about --seconds and
    prints the rate for each stage. Figures vary between runs on shared
    machines; compare ratios within one run.
    """,
  options: [
    .value("input", "FILE", "Capture to decode (btsnoop, pcap, pcapng)"),
    .value("seconds", "S", "How long to run each stage (default 2)"),
    .value("reports", "N", "Reports in the synthetic capture (default 200000)"),
  ],
  run: runBench)

struct BenchRow {
  let stage: String
  let reports: Int
  let nanos: UInt64
  var perSecond: Double { Double(reports) / (Double(nanos) / 1e9) }
}

/// Runs `body` (which returns the reports it handled) until `seconds` pass.
func measure(_ stage: String, seconds: Double, _ body: () -> Int) -> BenchRow {
  var reports = 0
  let start = Clock.monotonicNanos()
  var now = start
  repeat {
    reports += body()
    now = Clock.monotonicNanos()
  } while Double(now - start) < seconds * 1e9
  return BenchRow(stage: stage, reports: reports, nanos: now - start)
}

func runBench(_ args: Arguments) throws -> Int32 {
  let seconds = try args.double("seconds") ?? 2
  let bytes: [UInt8]
  let source: String
  if let input = args.value("input") {
    bytes = try FileBytes(path: input).bytes
    source = input
  } else {
    let n = Int(args.value("reports") ?? "200000") ?? 200_000
    bytes = SyntheticCapture.busyRoom(reports: n).bytes
    source = "synthetic busy room, \(n) reports"
  }

  // Pull the HCI events out once so the decode stage measures decoding only.
  var events: [[UInt8]] = []
  try bytes.withUnsafeBytes { raw in
    do {
      var reader = try CaptureReader(raw)
      while let r = reader.next() {
        if case .hciEvent(let e) = r.packet { events.append(Array(e)) }
      }
    } catch { throw CommandFailure("\(source): \(error)") }
  }
  let flat = events.flatMap { $0 }
  let bounds = events.reduce(into: [0]) { $0.append($0.last! + $1.count) }

  var rows: [BenchRow] = []
  var beacons = 0
  rows.append(
    measure("HCI event decode + iBeacon", seconds: seconds) {
      var decoder = AdvertisingEventDecoder()
      var n = 0
      flat.withUnsafeBytes { all in
        for i in 0..<(bounds.count - 1) {
          let event = UnsafeRawBufferPointer(rebasing: all[bounds[i]..<bounds[i + 1]])
          _ = decoder.decode(event: event) { report in
            n += 1
            if IBeacon.decode(advertisingData: report.data) != nil { beacons += 1 }
          }
        }
      }
      return n
    })
  rows.append(
    measure("capture read + decode + iBeacon", seconds: seconds) {
      var replay = CaptureReplay()
      var n = 0
      bytes.withUnsafeBytes { raw in
        try? replay.run(raw) { _, report in
          n += 1
          if IBeacon.decode(advertisingData: report.data) != nil { beacons += 1 }
        }
      }
      return n
    })

  Console.line("earshot bench: \(source), \(events.count) HCI events")
  Console.line("stage                                   reports/s      ns/report")
  for row in rows {
    let rate = JSONLine.format(row.perSecond, decimals: 0)
    let ns = JSONLine.format(1e9 / row.perSecond, decimals: 1)
    Console.line(
      row.stage.padding(40) + rate.padding(15) + ns)
  }
  if beacons == 0 && events.isEmpty { Console.line("(no advertising events in the input)") }
  return 0
}

extension String {
  func padding(_ width: Int) -> String {
    self + String(repeating: " ", count: max(1, width - count))
  }
}
