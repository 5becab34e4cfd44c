/// Reads a scenario description (INI, through the same reader as the
/// config):
///
///     [scenario]
///     start = 1767225600        ; Unix seconds
///     duration = 600            ; seconds
///     seed = 1
///     noise = 3                 ; RSSI noise, dB (standard deviation)
///     outliers = 0.02           ; fraction of reports 20 dB low
///     path_loss_exponent = 2
///     [adapter]
///     down = 200-230, 400-410   ; seconds from start
///     [beacon "desk"]
///     uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
///     major = 1
///     minor = 10
///     ; or altbeacon = ID1:ID2:ID3, or eddystone = NAMESPACE:INSTANCE
///     power = -59               ; measured power it advertises (1 m)
///     calibrated_power = -59    ; its real RSSI at 1 m (when power lies)
///     interval = 1.0            ; advertising interval, s
///     phase = 0                 ; first advertisement, s
///     loss = 0.3                ; fraction of advertisements missed
///     present = 10-300, 400-600 ; presence intervals (ground truth)
///     distance = 0:1, 60:5      ; seconds:metres, linear in between
///     addresses = 0:C1:00:00:00:00:01, 120:C1:00:00:00:00:02
///     telemetry = 3000:21.5     ; Eddystone-TLM after every 10th heard event (mV:°C)
///     [device "phone"]
///     irk = 0123456789ABCDEF0123456789ABCDEF ; its key, most significant byte first
///     identity = 00:1A:7D:DA:71:13  ; its identity address
///     addresses = rpa           ; rpa (from irk), nrpa, public or static (identity)
///     rotate = 900              ; seconds between private address changes
///     tx_power = 8              ; TX Power Level it advertises (dBm); omit for none
///     power = -59               ; its real RSSI at 1 m when it advertises no TX power
///     interval, phase, loss, present, distance: as for beacons
extension Scenario {
  public static func build(_ doc: ConfigDocument) throws -> Scenario {
    var s = Scenario()
    var errors = doc.syntaxErrors
    var beaconIndex: [String: Int] = [:]
    var deviceIndex: [String: Int] = [:]
    var ids: [Int: ScenarioBeaconID] = [:]
    for h in doc.headers {
      if h.name == "scenario" || h.name == "adapter" { continue }
      if h.name.hasPrefix("beacon \""), h.name.hasSuffix("\""), h.name.count > 9 {
        let name = String(h.name.dropFirst(8).dropLast())
        if beaconIndex[h.name] == nil {
          beaconIndex[h.name] = s.beacons.count
          ids[s.beacons.count] = ScenarioBeaconID()
          s.beacons.append(
            ScenarioBeacon(
              name: name, id: TrackedID(uuid: BeaconUUID(high: 0, low: 0), major: 0, minor: 0)))
        }
        continue
      }
      if h.name.hasPrefix("device \""), h.name.hasSuffix("\""), h.name.count > 9 {
        if deviceIndex[h.name] == nil {
          deviceIndex[h.name] = s.devices.count
          s.devices.append(ScenarioDevice(name: String(h.name.dropFirst(8).dropLast())))
        }
        continue
      }
      errors.append(
        ConfigError(
          file: doc.file, line: h.line, section: h.name,
          message:
            "unknown section; use [scenario], [adapter], [beacon \"NAME\"] or [device \"NAME\"]"))
    }
    for e in doc.entries {
      do {
        switch (e.section, e.key) {
        case ("scenario", "start"):
          s.start = Int64(try ConfigValue.double(e.value, in: 0...4e9) * 1e6)
        case ("scenario", "duration"): s.duration = try ConfigValue.double(e.value, in: 1...1e7)
        case ("scenario", "seed"):
          s.seed = UInt64(try ConfigValue.integer(e.value, in: 0...Int.max))
        case ("scenario", "noise"): s.noise = try ConfigValue.double(e.value, in: 0...30)
        case ("scenario", "outliers"): s.outliers = try ConfigValue.double(e.value, in: 0...1)
        case ("scenario", "path_loss_exponent"):
          s.model.exponent = try ConfigValue.double(e.value, in: 1...6)
        case ("adapter", "down"): s.adapterDown = try ranges(e.value)
        default:
          if let i = deviceIndex[e.section] {
            try setDevice(&s.devices[i], e.key, e.value)
            break
          }
          guard let i = beaconIndex[e.section] else {
            throw ConfigValueError("unknown key")
          }
          try setBeacon(&s.beacons[i], &ids[i]!, e.key, e.value)
        }
      } catch let v as ConfigValueError {
        errors.append(
          ConfigError(
            file: doc.file, line: e.line, section: e.section, key: e.key, message: v.message))
      }
    }
    for (i, id) in ids {
      guard let whole = id.resolved else {
        errors.append(
          ConfigError(
            file: doc.file, line: 0, section: "beacon \"\(s.beacons[i].name)\"", key: "uuid",
            message: "a beacon needs a uuid (or an altbeacon, an eddystone or an id)"))
        continue
      }
      s.beacons[i].id = whole
      if s.beacons[i].addresses.count == 1 && s.beacons[i].addresses[0].from == 0 {
        s.beacons[i].addresses = [
          (
            0,
            BDAddress(
              raw: 0xC000_0000_0000 | UInt64(i) << 32 | UInt64(id.major) << 16 | UInt64(id.minor))
          )
        ]
      }
    }
    for d in s.devices {
      let section = "device \"\(d.name)\""
      let line = doc.headers.first { $0.name == section }?.line ?? 0
      if d.kind == .rpa, d.irk == nil {
        errors.append(
          ConfigError(
            file: doc.file, line: line, section: section, key: "irk",
            message: "a device with resolvable private addresses needs an irk"))
      }
      if d.kind == .public || d.kind == .static, d.identity == nil {
        errors.append(
          ConfigError(
            file: doc.file, line: line, section: section, key: "identity",
            message: "a device sending from its identity address needs identity"))
      }
    }
    if !errors.isEmpty { throw ConfigErrors(errors) }
    return s
  }

  static func setDevice(_ d: inout ScenarioDevice, _ key: String, _ v: String) throws {
    switch key {
    case "irk":
      do { d.irk = try IdentityResolvingKey(hex: v) } catch {
        throw ConfigValueError(error.description)
      }
    case "identity":
      guard let a = BDAddress(v) else {
        throw ConfigValueError("'\(v)' is not an address such as AA:BB:CC:DD:EE:FF")
      }
      d.identity = a
    case "addresses": d.kind = try ConfigValue.choice(v, ScenarioDevice.AddressKind.self)
    case "rotate": d.rotate = try ConfigValue.double(v, in: 1...86_400)
    case "tx_power": d.txPower = Int8(try ConfigValue.integer(v, in: -127...20))
    case "power": d.power = Int8(try ConfigValue.integer(v, in: -100...20))
    case "interval": d.interval = try ConfigValue.double(v, in: 0.02...60)
    case "phase": d.phase = try ConfigValue.double(v, in: 0...1e7)
    case "loss": d.loss = try ConfigValue.double(v, in: 0...0.99)
    case "present": d.present = try ranges(v)
    case "distance": d.distance = try distances(v)
    default: throw ConfigValueError("unknown key")
    }
  }

  static func distances(_ v: String) throws -> [(t: Double, metres: Double)] {
    try ConfigValue.list(v).map { item in
      let p = item.split(separator: ":")
      guard p.count == 2, let t = Double(p[0]), let d = Double(p[1]), d > 0 else {
        throw ConfigValueError("expected SECONDS:METRES pairs, got '\(item)'")
      }
      return (t, d)
    }
  }

  static func setBeacon(
    _ b: inout ScenarioBeacon, _ id: inout ScenarioBeaconID, _ key: String, _ v: String
  ) throws {
    switch key {
    case "uuid": id.uuid = try ConfigValue.uuid(v)
    case "id":
      // Any tracked kind, written as Earshot prints it.
      guard let one = try TrackedMatch.parse(v).single else {
        throw ConfigValueError(
          "a beacon's id names one thing, every field given: KIND:FIELDS as Earshot prints it")
      }
      id.whole = one
    case "altbeacon":
      let a = try ConfigValue.altBeacon(v)
      guard let id2 = a.id2, let id3 = a.id3 else {
        throw ConfigValueError("a beacon's altbeacon is ID1:ID2:ID3, all three")
      }
      id = ScenarioBeaconID(format: .altBeacon, uuid: a.uuid, major: id2, minor: id3)
    case "eddystone":
      let e = try ConfigValue.eddystone(v)
      guard let instance = e.instance else {
        throw ConfigValueError("a beacon's eddystone is NAMESPACE:INSTANCE, both")
      }
      let full = TrackedID(eddystoneNamespace: e.namespace, instance: instance)
      id = ScenarioBeaconID(format: .eddystoneUID, uuid: full.uuid, major: 0, minor: 0)
    case "major": id.major = UInt16(try ConfigValue.integer(v, in: 0...65535))
    case "minor": id.minor = UInt16(try ConfigValue.integer(v, in: 0...65535))
    case "power": b.power = Int8(try ConfigValue.integer(v, in: -128...127))
    case "calibrated_power": b.calibratedPower = Int8(try ConfigValue.integer(v, in: -128...127))
    case "interval": b.interval = try ConfigValue.double(v, in: 0.02...60)
    case "phase": b.phase = try ConfigValue.double(v, in: 0...1e7)
    case "loss": b.loss = try ConfigValue.double(v, in: 0...0.99)
    case "present": b.present = try ranges(v)
    case "distance": b.distance = try distances(v)
    case "telemetry":
      let p = v.split(separator: ":")
      guard p.count == 2, let mv = UInt16(String(p[0]).trimmingWhitespace()), mv > 0,
        let c = Double(String(p[1]).trimmingWhitespace()), (-127...127).contains(c)
      else { throw ConfigValueError("expected MILLIVOLTS:CELSIUS (3000:21.5), got '\(v)'") }
      b.telemetry = (mv, c)
    case "addresses":
      b.addresses = try ConfigValue.list(v).map { item in
        guard let colon = item.firstIndex(of: ":"), let t = Double(item[..<colon]),
          let a = BDAddress(item[item.index(after: colon)...])
        else { throw ConfigValueError("expected SECONDS:AA:BB:CC:DD:EE:FF, got '\(item)'") }
        return (t, a)
      }
    default: throw ConfigValueError("unknown key")
    }
  }

  /// A beacon's identity as its keys give it (`uuid`/`major`/`minor`, or
  /// `altbeacon`, or `eddystone`, or `id` for any kind).
  struct ScenarioBeaconID {
    var format = TrackedKind.iBeacon
    var whole: TrackedID? = nil
    var uuid: BeaconUUID? = nil
    var major: UInt16 = 0
    var minor: UInt16 = 0

    /// `nil` until a key names the beacon.
    var resolved: TrackedID? {
      whole ?? uuid.map { TrackedID(kind: format, uuid: $0, major: major, minor: minor) }
    }
  }

  static func ranges(_ v: String) throws -> [Range<Double>] {
    try ConfigValue.list(v).map { item in
      let p = item.split(separator: "-")
      guard p.count == 2, let a = Double(p[0]), let b = Double(p[1]), a < b else {
        throw ConfigValueError("expected FROM-TO seconds, got '\(item)'")
      }
      return a..<b
    }
  }
}
