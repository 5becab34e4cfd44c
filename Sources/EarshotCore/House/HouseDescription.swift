/// Reads a house description (INI, through the same reader as the config;
/// see scenarios/house.spec):
///
///     [house]
///     start = 1767225600        ; Unix seconds
///     duration = 1800           ; seconds
///     seed = 1
///     path_loss_exponent = 2.5
///     wall_loss = 5             ; dB per wall crossed
///     shadowing = 4             ; dB, standard deviation
///     shadowing_time = 2        ; s, correlation time (0 = each advertisement)
///     fading = 2                ; dB, standard deviation, each advertisement
///     loss = 0.3                ; default for receivers
///     sensitivity = -100        ; dBm, weaker is not heard
///     [room "kitchen"]
///     area = 0 0 4 3            ; x1 y1 x2 y2, metres
///     [receiver "kitchen"]
///     position = 3.5 1.5        ; x y, metres
///     bias = 5                  ; dB it reads high
///     loss = 0.3
///     [beacon "walker"]
///     uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
///     major = 1
///     minor = 1
///     power = -59               ; measured power (its RSSI at 1 m)
///     interval = 1.0
///     phase = 0
///     present = 0-600, 700-1800 ; default: all the time
///     position = 1 1            ; standing still, or
///     path = 0: 1 1, 60: 1 1, 70: 5 1   ; seconds: x y, straight in between
///     path = 80: 5 3            ; more waypoints (lines are at most 198 bytes)
extension House {
  public static func build(_ doc: ConfigDocument) throws -> House {
    var h = House()
    var errors = doc.syntaxErrors
    var defaultLoss = 0.0
    var receiverLoss: [Int: Double] = [:]
    var rooms: [String: Int] = [:]
    var receivers: [String: Int] = [:]
    var beacons: [String: Int] = [:]
    var ids: [Int: (uuid: BeaconUUID?, major: UInt16, minor: UInt16)] = [:]
    var placed: Set<Int> = []
    var stands: Set<Int> = []
    var roomArea: Set<Int> = []
    var receiverPlaced: Set<Int> = []
    func quoted(_ name: String, _ prefix: String) -> String? {
      guard name.hasPrefix(prefix + " \""), name.hasSuffix("\""), name.count > prefix.count + 3
      else { return nil }
      return String(name.dropFirst(prefix.count + 2).dropLast())
    }
    for header in doc.headers {
      if header.name == "house" { continue }
      if let n = quoted(header.name, "room") {
        if rooms[header.name] == nil {
          rooms[header.name] = h.rooms.count
          h.rooms.append(HouseRoom(name: n, min: FloorPoint(0, 0), max: FloorPoint(0, 0)))
        }
      } else if let n = quoted(header.name, "receiver") {
        guard
          n.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "_" })
        else {
          errors.append(
            ConfigError(
              file: doc.file, line: header.line, section: header.name,
              message: "a receiver's name names its capture file: use letters, digits, - and _"))
          continue
        }
        if receivers[header.name] == nil {
          receivers[header.name] = h.receivers.count
          h.receivers.append(HouseReceiver(name: n, position: FloorPoint(0, 0)))
        }
      } else if let n = quoted(header.name, "beacon") {
        if beacons[header.name] == nil {
          beacons[header.name] = h.beacons.count
          ids[h.beacons.count] = (nil, 0, 0)
          h.beacons.append(
            HouseBeacon(
              name: n, id: TrackedID(uuid: BeaconUUID(high: 0, low: 0), major: 0, minor: 0),
              at: FloorPoint(0, 0)))
        }
      } else {
        errors.append(
          ConfigError(
            file: doc.file, line: header.line, section: header.name,
            message:
              "unknown section; use [house], [room \"NAME\"], [receiver \"NAME\"] or [beacon \"NAME\"]"
          ))
      }
    }
    for e in doc.entries {
      do {
        switch e.section {
        case "house":
          switch e.key {
          case "start":
            h.start = WallTime(micros: Int64(try ConfigValue.double(e.value, in: 0...4e9) * 1e6))
          case "duration": h.duration = .seconds(try ConfigValue.double(e.value, in: 1...1e7))
          case "seed": h.seed = UInt64(try ConfigValue.integer(e.value, in: 0...Int.max))
          case "path_loss_exponent": h.exponent = try ConfigValue.double(e.value, in: 1...6)
          case "wall_loss": h.wallLoss = try ConfigValue.double(e.value, in: 0...40)
          case "shadowing": h.shadowing = try ConfigValue.double(e.value, in: 0...30)
          case "shadowing_time": h.shadowingTime = try ConfigValue.double(e.value, in: 0...3600)
          case "fading": h.fading = try ConfigValue.double(e.value, in: 0...30)
          case "loss": defaultLoss = try ConfigValue.double(e.value, in: 0...0.99)
          case "sensitivity": h.sensitivity = try ConfigValue.double(e.value, in: -127...0)
          default: throw ConfigValueError("unknown key")
          }
        case _ where rooms[e.section] != nil:
          let i = rooms[e.section]!
          guard e.key == "area" else { throw ConfigValueError("unknown key; a room has an area") }
          let v = try numbers(e.value, count: 4, "X1 Y1 X2 Y2 in metres")
          h.rooms[i].min = FloorPoint(min(v[0], v[2]), min(v[1], v[3]))
          h.rooms[i].max = FloorPoint(max(v[0], v[2]), max(v[1], v[3]))
          guard h.rooms[i].min.x < h.rooms[i].max.x, h.rooms[i].min.y < h.rooms[i].max.y else {
            throw ConfigValueError("a room's area needs a width and a depth")
          }
          roomArea.insert(i)
        case _ where receivers[e.section] != nil:
          let i = receivers[e.section]!
          switch e.key {
          case "position":
            h.receivers[i].position = try point(e.value)
            receiverPlaced.insert(i)
          case "bias": h.receivers[i].bias = try ConfigValue.double(e.value, in: -40...40)
          case "loss": receiverLoss[i] = try ConfigValue.double(e.value, in: 0...0.99)
          default: throw ConfigValueError("unknown key")
          }
        case _ where beacons[e.section] != nil:
          let i = beacons[e.section]!
          switch e.key {
          case "uuid": ids[i]!.uuid = try ConfigValue.uuid(e.value)
          case "major": ids[i]!.major = UInt16(try ConfigValue.integer(e.value, in: 0...65535))
          case "minor": ids[i]!.minor = UInt16(try ConfigValue.integer(e.value, in: 0...65535))
          case "power": h.beacons[i].power = Int8(try ConfigValue.integer(e.value, in: -127...20))
          case "interval": h.beacons[i].interval = try ConfigValue.double(e.value, in: 0.02...60)
          case "phase": h.beacons[i].phase = try ConfigValue.double(e.value, in: 0...1e7)
          case "present": h.beacons[i].present = try Scenario.ranges(e.value)
          case "position":
            guard !placed.contains(i) else { throw ConfigValueError("give a position or a path") }
            h.beacons[i].path = [(0, try point(e.value))]
            placed.insert(i)
            stands.insert(i)
          case "path":
            // Lines are short: a long path continues on further `path` lines.
            guard !stands.contains(i) else { throw ConfigValueError("give a position or a path") }
            let more = try waypoints(
              e.value, after: placed.contains(i) ? h.beacons[i].path.last?.t : nil)
            h.beacons[i].path = placed.contains(i) ? h.beacons[i].path + more : more
            placed.insert(i)
          default: throw ConfigValueError("unknown key")
          }
        default:
          throw ConfigValueError("unknown key")
        }
      } catch let v as ConfigValueError {
        errors.append(
          ConfigError(
            file: doc.file, line: e.line, section: e.section, key: e.key, message: v.message))
      }
    }
    func missing(_ section: String, _ key: String, _ why: String) {
      errors.append(
        ConfigError(file: doc.file, line: 0, section: section, key: key, message: why))
    }
    for (i, r) in h.rooms.enumerated() {
      if !roomArea.contains(i) { missing("room \"\(r.name)\"", "area", "a room needs an area") }
      for o in h.rooms[..<i] where roomArea.contains(i) && o.overlaps(r) {
        missing("room \"\(r.name)\"", "area", "overlaps room \"\(o.name)\"")
      }
    }
    for (i, r) in h.receivers.enumerated() {
      h.receivers[i].loss = receiverLoss[i] ?? defaultLoss
      if !receiverPlaced.contains(i) {
        missing("receiver \"\(r.name)\"", "position", "a receiver needs a position")
      }
    }
    for i in h.beacons.indices {
      let name = "beacon \"\(h.beacons[i].name)\""
      if !placed.contains(i) { missing(name, "position", "a beacon needs a position or a path") }
      guard let id = ids[i], let uuid = id.uuid else {
        missing(name, "uuid", "a beacon needs a uuid")
        continue
      }
      h.beacons[i].id = TrackedID(uuid: uuid, major: id.major, minor: id.minor)
      h.beacons[i].address = BDAddress(
        raw: 0xC000_0000_0000 | UInt64(i) << 32 | UInt64(id.major) << 16 | UInt64(id.minor))
    }
    if h.receivers.isEmpty {
      missing("house", "", "a house needs at least one [receiver \"NAME\"]")
    }
    if !errors.isEmpty { throw ConfigErrors(errors) }
    return h
  }

  static func numbers(_ v: String, count: Int, _ what: String) throws -> [Double] {
    let parts = v.split(whereSeparator: { $0 == " " || $0 == "\t" })
    let values = parts.compactMap { Double($0) }.filter(\.isFinite)
    guard parts.count == count, values.count == count,
      values.allSatisfy({ abs($0) <= 10_000 })
    else {
      throw ConfigValueError("expected \(what), got '\(v)'")
    }
    return values
  }

  static func point(_ v: String) throws -> FloorPoint {
    let p = try numbers(v, count: 2, "X Y in metres")
    return FloorPoint(p[0], p[1])
  }

  static func waypoints(_ v: String, after: Double? = nil) throws -> [(t: Double, at: FloorPoint)] {
    var last = after ?? -1.0
    let items = try ConfigValue.list(v).map { item -> (t: Double, at: FloorPoint) in
      guard let colon = item.firstIndex(of: ":"), let t = Double(item[..<colon]), t >= 0,
        t > last
      else {
        throw ConfigValueError("expected SECONDS: X Y waypoints in time order, got '\(item)'")
      }
      last = t
      return (t, try point(String(item[item.index(after: colon)...])))
    }
    guard !items.isEmpty else { throw ConfigValueError("a path needs waypoints") }
    return items
  }
}
