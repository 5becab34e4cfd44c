import EarshotCore
import EarshotLinux

let devicesCommand = Command(
  name: "devices",
  summary: "List the devices bonded with this machine, whether each has an IRK, when last seen",
  details: """
    Asks the running agent (its status) when it follows the bonded devices
    (a region names a device): then 'last seen' is when the monitor last
    heard each one, resolved from its private address or by its identity.
    Otherwise the list comes from the keys file (or BlueZ's store when
    readable, or --store/--keys) and last seen is unknown.
    A device without an IRK did not distribute one (no privacy): it is
    recognised by its identity address only.
    """,
  options: [
    socketOption,
    .value("keys", "FILE", "Read this keys file instead of asking the agent"),
    .value("store", "DIR", "Read BlueZ's bond store (root) instead of asking the agent"),
    .value("format", "table|json", "Output format (default table; json is one object a line)"),
  ],
  run: runDevices)

struct DeviceRow {
  var address: String
  var type: String
  var irk: Bool
  var name: String?
  /// Seconds since the monitor last heard it; nil: not since the agent
  /// started, or no agent to ask.
  var secondsAgo: Double?
  var lastSeen: Double?
}

func runDevices(_ args: Arguments) throws -> Int32 {
  try noPositionals(args)
  let format = args.value("format") ?? "table"
  guard format == "table" || format == "json" else {
    throw UsageError("--format must be table or json, not '\(format)'")
  }
  if args.value("keys") != nil && args.value("store") != nil {
    throw UsageError("give --keys or --store, not both")
  }
  var rows: [DeviceRow] = []
  var note: String
  var fromAgent = false
  if args.value("keys") == nil, args.value("store") == nil, let client = runningAgent(args),
    let section = try resultFields(client.call(.status))["devices"]?.array
  {
    fromAgent = true
    note = "from the running agent"
    for d in section {
      rows.append(
        DeviceRow(
          address: d["address"]?.string ?? "?", type: d["type"]?.string ?? "?",
          irk: d["irk"]?.bool ?? false, name: d["name"]?.string,
          secondsAgo: d["seconds_ago"]?.number, lastSeen: d["last_seen"]?.number))
    }
  } else {
    let source: BondedKeysSource
    if let path = args.value("keys") {
      source = .keysFile(path: path)
    } else if let root = args.value("store") {
      source = .store(root: root)
    } else {
      source = BondedKeysSource.forAgent()
    }
    let set: BondedKeySet
    do { set = try source.read() } catch { throw CommandFailure(error.description) }
    for problem in set.problems { Console.error("earshot devices: \(problem)\n") }
    note = "from \(source); last seen unknown (the agent is not running or follows no devices)"
    rows = set.keys.map {
      DeviceRow(
        address: $0.identity.description, type: $0.identityType.rawValue, irk: $0.irk != nil,
        name: $0.name)
    }
  }
  if format == "json" {
    for r in rows {
      var fields: [(String, JSONValue)] = [
        ("address", .string(r.address)), ("type", .string(r.type)), ("irk", .bool(r.irk)),
        ("name", r.name.map { .string($0) } ?? .null),
        ("last_seen", r.lastSeen.map { .number($0) } ?? .null),
      ]
      if !fromAgent { fields.append(("last_seen_known", .bool(false))) }
      Console.line(JSONValue.object(fields).encoded)
    }
    return 0
  }
  Console.line("\(rows.count) bonded device(s), \(note)")
  guard !rows.isEmpty else { return 0 }
  let table =
    [["ADDRESS", "TYPE", "IRK", "LAST SEEN", "NAME"]]
    + rows.map { r in
      [
        r.address, r.type, r.irk ? "yes" : "no",
        !fromAgent ? "unknown" : r.secondsAgo.map { ago($0) } ?? "not seen", r.name ?? "",
      ]
    }
  let widths = (0..<5).map { c in table.map { $0[c].count }.max() ?? 0 }
  for row in table {
    var line = ""
    for (c, cell) in row.enumerated() {
      line += c == 4 ? cell : cell + String(repeating: " ", count: widths[c] - cell.count + 2)
    }
    Console.line(line)
  }
  return 0
}

/// "4 s ago", "12 min ago", "3 h ago".
private func ago(_ seconds: Double) -> String {
  let s = max(0, seconds)
  if s < 120 { return "\(Int(s.rounded())) s ago" }
  if s < 7200 { return "\(Int((s / 60).rounded())) min ago" }
  return "\(Int((s / 3600).rounded())) h ago"
}
