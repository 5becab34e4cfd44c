import EarshotCore
import EarshotLinux

/// `earshot simulate radio`: the closed loop of monitor, scan scheduler and
/// a radio that hears only in the scan windows, on the scheduling issue's
/// house; one row per power state and policy.
func runSimulateRadio(_ args: Arguments) throws -> Int32 {
  func number(_ name: String, _ fallback: Double) throws -> Double {
    guard let text = args.value(name) else { return fallback }
    guard let x = Double(text), x > 0, x.isFinite else {
      throw UsageError("--\(name) expects a positive number")
    }
    return x
  }
  let hours = try number("hours", 24)
  let seed = UInt64(try number("seed", 1))
  let fast = Int(try number("fast", 4))
  let slow = Int(args.value("slow").map { Double($0) ?? -1 } ?? 2)
  let phones = Int(args.value("phones").map { Double($0) ?? -1 } ?? 2)
  guard slow >= 0, phones >= 0 else { throw UsageError("--slow and --phones expect 0 or more") }
  var sim = RadioSimulation.house(
    hours: hours, seed: seed, fastBeacons: fast, slowBeacons: slow, phones: phones)
  // "today": full duty and no name requests, as before the scheduler.
  // An allowance other than the scheduler's, to weigh radio time against
  // exit latency: SPANS[:MAX_SECONDS].
  func allowance(_ name: String, _ fallback: ExitAllowance) throws -> ExitAllowance {
    guard let text = args.value(name) else { return fallback }
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    guard (1...2).contains(parts.count), let spans = Double(parts[0]), spans >= 0,
      let most = parts.count == 2 ? Double(parts[1]) : .infinity, most >= 0
    else { throw UsageError("--\(name) expects SPANS or SPANS:MAX_SECONDS, e.g. 1.75:14") }
    return ExitAllowance(confirmSpans: spans, maxSeconds: most)
  }
  let defaults = ScanScheduleSettings()
  let battery = try allowance("battery-allowance", defaults.batteryAllowance)
  let mains = try allowance("mains-allowance", defaults.mainsAllowance)
  let rows: [(String, ScanPolicy, PowerSupply, Bool)] = [
    ("battery", .automatic, .battery, true), ("mains", .automatic, .mains, true),
    ("full", .full, .mains, true), ("today", .full, .mains, false),
  ]
  let json = args.value("format") == "json"
  if !json {
    print(
      "policy   duty %  class   exits  exit median s  enters  enter median s  false exits"
    )
  }
  let directory = args.value("write")
  if let directory { try makeDirectory(directory) }
  for (name, policy, power, names) in rows {
    sim.nameRequests = names
    let schedule = ScanScheduleSettings(
      policy: policy, mainsAllowance: mains, batteryAllowance: battery)
    let r: RadioSimulation.Result
    if let directory, name == "battery" {
      r = try writeRadioCapture(sim, schedule: schedule, power: power, to: directory)
    } else {
      r = sim.run(schedule: schedule, power: power)
    }
    for key in r.byClass.keys.sorted() {
      let l = r.byClass[key]!
      if json {
        var j = JSONLine()
        j.add("policy", name)
        j.addRaw("duty", JSONLine.format(r.meanDuty, decimals: 4))
        j.add("class", key)
        j.addRaw("exits", "\(l.exits.count)")
        j.addRaw("exit_median", median(l.exits).map { JSONLine.format($0, decimals: 2) } ?? "null")
        j.addRaw("enters", "\(l.enters.count)")
        j.addRaw(
          "enter_median", median(l.enters).map { JSONLine.format($0, decimals: 2) } ?? "null")
        j.addRaw("false_exits", "\(l.falseExits)")
        print(j.line)
      } else {
        func cell(_ s: String, _ w: Int) -> String {
          s + String(repeating: " ", count: max(1, w - s.count))
        }
        let m = median(l.exits).map { JSONLine.format($0, decimals: 2) } ?? "-"
        let e = median(l.enters).map { JSONLine.format($0, decimals: 2) } ?? "-"
        print(
          cell(name, 9) + cell(JSONLine.format(r.meanDuty * 100, decimals: 1), 8)
            + cell(key, 8) + cell("\(l.exits.count)", 7) + cell(m, 15)
            + cell("\(l.enters.count)", 8)
            + cell(e, 16) + "\(l.falseExits)")
      }
    }
  }
  return 0
}

/// Runs `sim` writing DIR/air.pcap and DIR/scan.btsnoop (`RadioCapture`)
/// as they grow.
private func writeRadioCapture(
  _ sim: RadioSimulation, schedule: ScanScheduleSettings, power: PowerSupply,
  to directory: String
) throws -> RadioSimulation.Result {
  let air = try FileSink(creating: directory + "/air.pcap")
  let scan = try FileSink(creating: directory + "/scan.btsnoop")
  var capture = RadioCapture(sim)
  var failure: (any Error)?
  func drain() {
    let (a, s) = capture.takeBytes()
    do {
      try air.write(a)
      try scan.write(s)
    } catch { failure = failure ?? error }
  }
  let r = sim.run(schedule: schedule, power: power) { record in
    capture.add(record)
    if capture.airPDUs % 65_536 == 0 { drain() }
  }
  drain()
  if let failure { throw failure }
  try air.flush()
  try scan.flush()
  return r
}

private func median(_ xs: [Double]) -> Double? {
  guard !xs.isEmpty else { return nil }
  let s = xs.sorted()
  return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}
