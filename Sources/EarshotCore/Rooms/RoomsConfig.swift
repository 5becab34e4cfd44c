/// `[rooms]`: which room this agent is, which beacons it reports to the
/// room aggregator, and how the aggregator (`earshot rooms`) decides.
public struct RoomsConfig: Sendable, Equatable {
  /// This agent's room; `nil`: the host name.
  public var room: String? = nil
  /// Beacons to publish sightings of (agent) and to place in rooms (aggregator).
  public var track: [TrackedMatch] = []
  /// Devices, by identity, to publish sightings of and place in rooms.
  public var trackDevices: [TrackedDevice] = []
  /// Seconds between two sightings of one beacon from one agent.
  public var interval = 1.0
  /// Also publish each sighting as the ESPresense firmware would
  /// (`espresense/devices/ID/ROOM`), for ESPresense-companion and HA's
  /// `mqtt_room`.
  public var espresense = false
  /// The aggregator also takes ESPresense nodes' sightings and status as
  /// agents'.
  public var espresenseNodes = false
  /// Topic prefix shared by every agent and aggregator of a site.
  public var topic = "earshot/rooms"
  /// Sighting topics are spread over this many shards by beacon.
  public var shards = 16
  /// The shards this aggregator serves; `nil`: all of them.
  public var serve: [ClosedRange<Int>]? = nil
  /// Seconds of sightings the candidate room is chosen over.
  public var window = 5.0
  /// Seconds a challenger must keep winning before it becomes the room.
  public var switchAfter = 3.0
  /// How much better a challenger must be than the current room.
  public var margin = RoomMargin.decibels(3)
  /// Seconds heard by nobody before a beacon is away, or auto.
  public var awayAfter = ExitAfter.seconds(30)

  public init() {}

  /// Whether this agent publishes sightings (it tracks something).
  public var publishes: Bool { !track.isEmpty || !trackDevices.isEmpty }

  public func tracks(_ id: TrackedID) -> Bool { track.contains { $0.matches(id) } }

  /// Whether the aggregator places `subject`: every subject sighted when
  /// `track` is empty, else the beacons and devices it names.
  public func places(_ subject: RoomSubject) -> Bool {
    guard publishes else { return true }
    switch subject {
    case .beacon(let b): return tracks(b)
    case .device(let d): return trackDevices.contains { $0.id == d }
    }
  }

  /// The name `track` gives a device (`phone=device:…`), if any.
  public func name(of device: TrackedDeviceID) -> String? {
    trackDevices.first { $0.id == device }?.name
  }

  public func serves(shard: Int) -> Bool {
    guard let serve else { return true }
    return serve.contains { $0.contains(shard) }
  }
}

/// A challenger's required lead: in dB of path loss (10 n log10 of the
/// distance ratio, n = [ranging] path_loss_exponent, so it means the same
/// at 1 m and at 8 m) or in metres.
public enum RoomMargin: Sendable, Equatable, CustomStringConvertible {
  case decibels(Double)
  case metres(Double)

  static func parse(_ v: String) throws -> RoomMargin {
    let t = String(v.lowercased().filter { $0 != " " })
    let (digits, metres): (Substring, Bool) =
      t.hasSuffix("db")
      ? (t.dropLast(2), false) : t.hasSuffix("m") ? (t.dropLast(), true) : (t[...], false)
    guard let d = Double(digits), d.isFinite, d >= 0, d <= (metres ? 100 : 40) else {
      throw ConfigValueError(
        "expected decibels (0 to 40, e.g. 3 dB) or metres (0 to 100, e.g. 0.5 m), got '\(v)'")
    }
    return metres ? .metres(d) : .decibels(d)
  }

  public var description: String {
    switch self {
    case .decibels(let d): "\(ConfigValue.show(d)) dB"
    case .metres(let m): "\(ConfigValue.show(m)) m"
    }
  }
}

extension RoomsConfig: ConfigSection {
  public static let section = "rooms"
  public static let summary =
    "Rooms: sightings this agent publishes over MQTT, and how earshot rooms places beacons."
  public static let keys: [ConfigKey<RoomsConfig>] = [
    .optionalText("room", "This agent's room name; empty = the host name.", \.room),
    .init(
      "track",
      "Beacons and devices to publish sightings of and place in rooms: UUID[:MAJOR[:MINOR]], altbeacon:ID1[:ID2[:ID3]], eddystone:NAMESPACE[:INSTANCE], [NAME=]device:ADDRESS or [NAME=]irk:KEY, separated by spaces; empty = none (no sightings).",
      set: { s, v in try s.setTrack(v) },
      show: { c in
        (c.track.map(\.description) + c.trackDevices.map(\.description)).joined(separator: " ")
      }),
    .number(
      "interval", "Seconds between two sightings of one beacon from this agent.", \.interval,
      in: 0.1...3600),
    .bool(
      "espresense",
      "Also publish each sighting as ESPresense does (espresense/devices/ID/ROOM), for ESPresense-companion and mqtt_room.",
      \.espresense),
    .bool(
      "espresense_nodes",
      "earshot rooms also takes ESPresense nodes' sightings (espresense/devices/+/+) and status as agents'.",
      \.espresenseNodes),
    .text("topic", "Topic prefix shared by the site's agents and aggregators.", \.topic),
    .integer(
      "shards", "Sighting topics are partitioned by beacon into this many shards.", \.shards,
      in: 1...4096),
    .init(
      "serve",
      "Shards this aggregator serves: all, or numbers and ranges like 0-3,8 (several aggregators share a site).",
      set: { s, v in s.serve = try parseShards(v) },
      show: { c in
        c.serve.map {
          $0.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }
            .joined(separator: ",")
        }
          ?? "all"
      }),
    .number(
      "window", "Seconds of sightings the candidate room is chosen over.", \.window, in: 0.5...120
    ),
    .number(
      "switch_after", "Seconds a challenger room must keep winning before the room changes.",
      \.switchAfter, in: 0...600),
    .init(
      "margin", "How much closer a challenger must be: dB of path loss (3 dB) or metres (0.5 m).",
      set: { s, v in s.margin = try RoomMargin.parse(v) }, show: { $0.margin.description }),
    .init(
      "away_after", "Seconds heard by no agent before a beacon is away, or auto (as exit_after).",
      set: { s, v in s.awayAfter = try ExitAfter.parse(v) }, show: { $0.awayAfter.description }),
  ]

  /// Beacons and devices in any order; a device named twice (or two
  /// devices under one name) is refused, since topics and Home Assistant
  /// would mix them up.
  mutating func setTrack(_ v: String) throws {
    var beacons: [TrackedMatch] = []
    var devices: [TrackedDevice] = []
    for word in v.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," }).map(String.init) {
      guard let d = try TrackedDevice.parse(word) else {
        do { beacons.append(try TrackedMatch.parse(word)) } catch {
          throw ConfigValueError(
            "\(error) (a device is device:ADDRESS or irk:KEY, optionally named first: phone=device:AA:BB:CC:DD:EE:FF)"
          )
        }
        continue
      }
      if devices.contains(where: { $0.id == d.id }) {
        throw ConfigValueError("device \(d.id) is tracked twice")
      }
      if let n = d.name, devices.contains(where: { $0.name == n }) {
        throw ConfigValueError("two devices are named '\(n)'")
      }
      devices.append(d)
    }
    track = beacons
    trackDevices = devices
  }

  static func parseShards(_ v: String) throws -> [ClosedRange<Int>]? {
    if v == "all" { return nil }
    var out: [ClosedRange<Int>] = []
    for part in ConfigValue.list(v) {
      let ends = part.split(separator: "-", omittingEmptySubsequences: false)
      guard (1...2).contains(ends.count), let lo = Int(ends[0]), let hi = Int(ends.last!), lo >= 0,
        lo <= hi
      else {
        throw ConfigValueError(
          "expected all, or shard numbers and ranges like 0-3,8; got '\(part)'")
      }
      out.append(lo...hi)
    }
    guard !out.isEmpty else { throw ConfigValueError("expected all, or shard numbers like 0-3,8") }
    return out
  }
}
