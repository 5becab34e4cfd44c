/// Everything `earshot.conf` can say, typed, with defaults filled in.
/// Built from a `ConfigDocument` by `Config.build`, which reports every
/// problem with its file, line and key.
public struct Config: Sendable {
  public var scanner = ScannerConfig()
  public var ranging = RangingConfig()
  public var monitor = MonitorConfig()
  public var regions: [RegionConfig] = []
  public var audio = AudioConfig()
  public var findPhone = FindPhoneConfig()
  public var control = ControlConfig()
  public var state = StateConfig()
  public var mqtt = MQTTConfig()
  public var log = ProximityLogConfig()
  public var shutter = ShutterConfig()
  public var media = MediaConfig()
  public var link = LinkConfig()
  /// `[tag "NAME"]` sections, in file order.
  public var tags: [TagConfig] = []
  /// `[layout "NAME"]` sections, in file order (`beaconClassifier`).
  public var layouts: [LayoutConfig] = []
  public var rooms = RoomsConfig()
  public var esphome = ESPHomeConfig()
  public var trackers = TrackersConfig()

  public init(paths: ConfigPaths = .system) {
    control.socket = paths.controlSocket
    state.path = paths.stateFile
  }
}

/// Defaults that differ between the system service and a user's own agent.
public struct ConfigPaths: Sendable {
  public var controlSocket: String
  public var stateFile: String
  public init(controlSocket: String, stateFile: String) {
    self.controlSocket = controlSocket
    self.stateFile = stateFile
  }
  public static let system = ConfigPaths(
    controlSocket: "/run/earshot/control.sock", stateFile: "/var/lib/earshot/state")
  /// For a user service: `$XDG_RUNTIME_DIR` and `$XDG_STATE_HOME`.
  public static func user(runtimeDir: String, stateHome: String) -> ConfigPaths {
    ConfigPaths(
      controlSocket: runtimeDir + "/earshot.sock", stateFile: stateHome + "/earshot/state")
  }
}

public struct ScannerConfig: Sendable, Equatable {
  /// `nil`: the first LE-capable adapter.
  public var adapter: String? = nil
  /// Passive by default: nothing Earshot decides needs a scan response,
  /// and scan requests cost every scannable advertiser's and Wi-Fi's air time.
  public var passive = true
  public var mode = ScanMode.auto
  /// How much radio time the agent's scan takes (`ScanScheduler`).
  public var duty = ScanPolicy.automatic
  public init() {}
}

public enum ScanMode: String, Sendable, CaseIterable {
  case legacy, extended, auto
}

public struct RangingConfig: Sendable, Equatable {
  public var pathLossExponent = 2.0
  /// dB added to every RSSI: this receiver's offset from the reference
  /// receiver that beacons calibrate their measured power with.
  public var rssiOffset = 0.0
  /// Seconds without a report after which a beacon's proximity is unknown.
  public var staleAfter = 5.0
  /// Seconds between range updates.
  public var interval = 1.0
  public init() {}

  public var model: PathLossModel {
    PathLossModel(exponent: pathLossExponent, rssiOffset: rssiOffset)
  }
}

public struct MonitorConfig: Sendable, Equatable {
  /// Default for regions that do not set `exit_after`.
  public var exitAfter = ExitAfter.seconds(30)
  /// `exit_after = auto` never waits less than this: the margin for a
  /// phone that slows from 100 ms to 1 s when locked, before its new pace
  /// is learnt (at 30 % loss its first slow gap outlasts 6 s with a chance
  /// of 0.3^6 = 7e-4 per slowdown).
  public var autoFloor = 6.0
  /// ... nor more than this.
  public var autoCeiling = 300.0
  /// Live: before a device's region is declared outside, page it by name
  /// (a BR/EDR Remote Name Request to its public identity address).
  public var nameRequests = true
  public init() {}
}

public enum ExitAfter: Sendable, Equatable, CustomStringConvertible {
  case seconds(Double)
  case auto

  static func parse(_ v: String) throws -> ExitAfter {
    if v == "auto" { return .auto }
    guard let d = Double(v), d.isFinite else {
      throw ConfigValueError("expected a number of seconds or 'auto', got '\(v)'")
    }
    guard d >= 1, d <= 86_400 else {
      throw ConfigValueError("\(v) is out of range; expected 1 to 86400 seconds, or 'auto'")
    }
    return .seconds(d)
  }

  public var description: String {
    switch self {
    case .seconds(let s): ConfigValue.show(s)
    case .auto: "auto"
    }
  }
}

public struct RegionConfig: Sendable, Equatable {
  public var name: String
  /// Line of the `[region "NAME"]` header, for messages.
  public var line: Int
  /// The beacons' format (`uuid` for iBeacons, `altbeacon`, `eddystone`).
  public var format: TrackedKind = .iBeacon
  /// iBeacon's UUID, AltBeacon's id1, or Eddystone's namespace and instance
  /// (`TrackedID`'s layout).
  public var uuid: BeaconUUID? = nil
  public var major: UInt16? = nil
  public var minor: UInt16? = nil
  /// Eddystone: whether the instance was given (else any instance of the
  /// namespace counts).
  public var matchesInstance = false
  /// `beacon = KIND:FIELDS` as written: read once the whole file is, since
  /// the `[layout "NAME"]` it names may come later in it.
  public var beaconWritten: String? = nil
  /// Beacons of any kind, a user layout's included (`beacon =`).
  public var beaconMatch: TrackedMatch? = nil
  /// `nil` until resolved against `[monitor] exit_after`.
  public var exitAfter: ExitAfter? = nil
  public var onEnter: [String]? = nil
  public var onExit: [String]? = nil
  public var hookTimeout = 10.0
  /// Identity addresses of devices (bonded with this machine) that count.
  public var devices: [BDAddress] = []
  /// Keys given by hand: a device whose private addresses one resolves counts.
  public var irks: [IdentityResolvingKey] = []
  /// dBm a device is heard at 1 m when it advertises no TX power.
  public var power: Int8 = RegionConfig.defaultDevicePower
  /// `[tag "NAME"]`s whose connection counts as presence.
  public var tags: [String] = []

  /// -59 dBm: what phones and tags commonly report as their 1 m power (the
  /// usual iBeacon calibration), a middling guess for an unknown device.
  public static let defaultDevicePower: Int8 = -59

  public init(name: String, line: Int) {
    self.name = name
    self.line = line
  }

  /// The region's beacons as one match (`nil` for a region of devices,
  /// IRKs or tags).
  public var beacons: TrackedMatch? {
    if let beaconMatch { return beaconMatch }
    guard let uuid else { return nil }
    guard format == .eddystoneUID else {
      return TrackedMatch(kind: format, uuid: uuid, major: major, minor: minor)
    }
    let id = TrackedID(kind: .eddystoneUID, uuid: uuid, major: 0, minor: 0)
    return TrackedMatch(
      kind: .eddystoneUID, values: [id.field(0), matchesInstance ? id.field(1) : nil])
  }

  public func matches(_ id: TrackedID) -> Bool { beacons?.matches(id) ?? false }

  /// Whether a device counts for this region: its identity is listed under
  /// `device =`, or its key under `irk =`.
  public func matches(_ device: DeviceIdentity) -> Bool {
    if let a = device.address, devices.contains(a) { return true }
    if let k = device.irk, irks.contains(k) { return true }
    return false
  }

  /// Whether the region watches devices at all.
  public var watchesDevices: Bool { !devices.isEmpty || !irks.isEmpty }

  /// Whether the scanner's reports count for it (an iBeacon or a device):
  /// a region of tags only does not depend on scanning.
  public var watchesReports: Bool { uuid != nil || beaconMatch != nil || watchesDevices }

  /// `uuid[:major[:minor]]`, then the devices and key tags, to recognise
  /// the region in a state file (a key is named by its tag, not written).
  public var identity: String {
    var s = beaconMatch?.description ?? uuid?.description ?? "-"
    if let major { s += ":\(major)" }
    if let minor { s += ":\(minor)" }
    if !devices.isEmpty { s += "+device=" + devices.map(\.description).joined(separator: ",") }
    if !irks.isEmpty { s += "+irk=" + irks.map(\.tag).joined(separator: ",") }
    if !tags.isEmpty { s += "+tag=" + tags.joined(separator: ",") }
    return s
  }
}

public struct AudioConfig: Sendable, Equatable {
  public var device = "default"
  public var fallback: [String] = []
  public var mixerCard = "default"
  public var mixerControl = "Master"
  public var sound = "ring"
  public var frequency = 880.0
  public var ramp = 3.0
  public init() {}
}

/// `[find-phone]`: how loud and how long; also the find-phone coordinator's settings.
public struct FindPhoneConfig: Sendable, Equatable {
  /// Level the alert plays at on speakers (0...1).
  public var volume: Double
  /// Cap when the output is headphones: an alert must not blast ears.
  public var headphoneVolume: Double
  /// Seconds of ringing before it stops by itself (Fast Pair rings 60 s).
  public var timeout: Double
  /// `nil`: `[audio] sound`.
  public var sound: String?

  public init() { self.init(volume: 0.9) }

  public init(
    volume: Double = 0.9, headphoneVolume: Double = 0.3, timeout: Double = 60, sound: String? = nil
  ) {
    self.volume = volume
    self.headphoneVolume = headphoneVolume
    self.timeout = timeout
    self.sound = sound
  }

  /// The level to ring at for this output.
  public func ringLevel(headphones: Bool) -> Double {
    headphones ? min(volume, headphoneVolume) : volume
  }
}

public struct ControlConfig: Sendable, Equatable {
  public var socket = ""
  /// A group whose members may use the socket besides root and the agent's user.
  public var group: String? = nil
  /// Clients served at once; more are refused with an error line.
  public var maxClients = 1024
  public init() {}
}

/// `[mqtt]`: off until `host` is set.
public struct MQTTConfig: Sendable, Equatable {
  public var host: String? = nil
  public var port = 1883
  public var username: String? = nil
  /// A file holding the password (kept out of the config, which is often world-readable).
  public var passwordFile: String? = nil
  public var tls = false
  public var ca: String? = nil
  public var cert: String? = nil
  public var key: String? = nil
  /// `nil`: `earshot-<hostname>`.
  public var clientID: String? = nil
  /// `nil`: `earshot/<hostname>`.
  public var baseTopic: String? = nil
  public var qos = 1
  public var retain = true
  public var discovery = true
  public var discoveryPrefix = "homeassistant"
  /// Seconds between two publications of one beacon's distance.
  public var beaconInterval = 10.0
  public init() {}

  public var enabled: Bool { host != nil }
}

/// `[esphome]`: the Home Assistant Bluetooth proxy (ESPHome native API); off by default.
public struct ESPHomeConfig: Sendable, Equatable {
  public var enabled = false
  /// Loopback by default: the API reaches the network only when asked.
  public var bind = "127.0.0.1"
  public var port = 6053
  /// A file holding the base64 pre-shared key (Noise); required unless plaintext is allowed.
  public var keyFile: String? = nil
  public var insecurePlaintext = false
  /// `nil`: from the host name.
  public var name: String? = nil
  public var maxClients = 8
  /// Announce over mDNS through Avahi (only when `bind` is not loopback).
  public var mdns = true
  public init() {}

  /// Loopback addresses: nothing to announce to the network.
  public var bindsLoopback: Bool { bind.hasPrefix("127.") || bind == "::1" }
}

/// `[trackers]`: watching for unknown trackers that travel with the laptop
/// (docs/trackers.md); off by default.
public struct TrackersConfig: Sendable, Equatable {
  public var enabled = false
  public var sensitivity = TrackerSensitivity.medium
  /// Seconds a stranger's tracker is kept after it was last heard.
  public var retention = 86_400.0
  /// Enrolled trackers: they never alert.
  public var trusted: [BDAddress] = []
  /// Run when a tracker starts to follow, as the region hooks are.
  public var onFollowing: [String]? = nil
  public var hookTimeout = 10.0
  /// Publish the trackers that follow to MQTT (a Home Assistant sensor and
  /// event); off, nothing about strangers' trackers leaves the machine.
  public var mqtt = false
  /// Seconds a tracker must be heard across (nil: the sensitivity's).
  public var span: Double? = nil
  /// Distinct places it must be heard in (nil: the sensitivity's).
  public var places: Int? = nil
  /// Seconds between two sightings counted in one place.
  public var spacing = 900.0
  /// Wi-Fi access points and the network the laptop is on as places and moves.
  public var wifi = true
  public init() {}
}

public struct StateConfig: Sendable, Equatable {
  public var path = ""
  public init() {}
}

// MARK: - The key tables: one per section, the single place keys are defined.

extension Config {
  /// Every section with one instance, in the order `check-config` prints
  /// them (and the table in docs/configuration.md and etc/earshot.conf follow).
  public static let sections: [SectionTable] = [
    .make({ $0.scanner }, { $0.scanner = $1 }),
    .make({ $0.ranging }, { $0.ranging = $1 }),
    .make({ $0.monitor }, { $0.monitor = $1 }),
    .make({ $0.audio }, { $0.audio = $1 }),
    .make({ $0.findPhone }, { $0.findPhone = $1 }),
    .make({ $0.control }, { $0.control = $1 }),
    .make({ $0.state }, { $0.state = $1 }),
    .make({ $0.shutter }, { $0.shutter = $1 }),
    .make({ $0.media }, { $0.media = $1 }),
    .make({ $0.link }, { $0.link = $1 }),
    .make({ $0.mqtt }, { $0.mqtt = $1 }),
    .make({ $0.log }, { $0.log = $1 }),
    .make({ $0.rooms }, { $0.rooms = $1 }),
    .make({ $0.esphome }, { $0.esphome = $1 }),
    .make({ $0.trackers }, { $0.trackers = $1 }),
  ]
}

extension ScannerConfig: ConfigSection {
  public static let section = "scanner"
  public static let summary = "The Bluetooth adapter and how it scans."
  public static let keys: [ConfigKey<ScannerConfig>] = [
    .init(
      "adapter", "Adapter to scan with (hci0, ...); auto = the first LE-capable one.",
      set: { s, v in s.adapter = v == "auto" ? nil : try ConfigValue.nonEmpty(v) },
      show: { $0.adapter ?? "auto" }),
    .bool(
      "passive",
      "Passive scanning: listen only, send no scan requests; false for beacons that put their frame in the scan response.",
      \.passive),
    .choice(
      "mode", "legacy, extended or auto (extended scan commands when the controller has them).",
      \.mode),
    .choice(
      "duty",
      "Radio time the agent's scan takes: automatic (short windows while every region is settled, fewer on battery, all the time before an exit), saving (the battery timing on mains too) or full (all the time).",
      \.duty),
  ]
}

extension RangingConfig: ConfigSection {
  public static let section = "ranging"
  public static let summary = "Distance estimates from RSSI (log-distance path-loss model)."
  public static let keys: [ConfigKey<RangingConfig>] = [
    .number(
      "path_loss_exponent",
      "n in rssi = power - 10 n log10(d): 2 in free space, 2.5-4 indoors with people and walls.",
      \.pathLossExponent, in: 1...6),
    .number(
      "rssi_offset",
      "dB added to every RSSI to calibrate this receiver against the beacons' 1 m reference.",
      \.rssiOffset, in: -40...40),
    .number(
      "stale_after", "Seconds without a report after which a beacon's proximity is unknown.",
      \.staleAfter, in: 1...600),
    .number(
      "interval", "Seconds between range updates of a region with beacons inside.", \.interval,
      in: 0.1...3600),
  ]
}

extension MonitorConfig: ConfigSection {
  public static let section = "monitor"
  public static let summary = "Region monitoring defaults."
  public static let keys: [ConfigKey<MonitorConfig>] = [
    .init(
      "exit_after", "Default for regions: seconds without a report before exit, or auto.",
      set: { s, v in s.exitAfter = try ExitAfter.parse(v) }, show: { $0.exitAfter.description }),
    .number(
      "auto_floor", "exit_after = auto never exits sooner than this many seconds.", \.autoFloor,
      in: 1...3600),
    .number(
      "auto_ceiling", "exit_after = auto never waits longer than this many seconds.",
      \.autoCeiling, in: 1...86_400),
    .bool(
      "name_requests",
      "Before a device's region is declared outside, ask the device by name (a BR/EDR page to its public address): a locked phone that went quiet still answers.",
      \.nameRequests),
  ]
}

extension AudioConfig: ConfigSection {
  public static let section = "audio"
  public static let summary = "The alert player and the mixer (used by find-phone)."
  public static let keys: [ConfigKey<AudioConfig>] = [
    .text("device", "ALSA PCM to play alerts on.", \.device),
    .init(
      "fallback",
      "PCMs tried in order when device is busy or missing, separated by spaces (ALSA names hold commas).",
      set: { s, v in
        s.fallback = v.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
      },
      show: { $0.fallback.joined(separator: " ") }),
    .text("mixer_card", "ALSA card whose mixer sets the volume.", \.mixerCard),
    .text("mixer_control", "Mixer control for the volume.", \.mixerControl),
    .text("sound", "Alert sound: ring, chirp, or a file name in sounds/ or a path.", \.sound),
    .number(
      "frequency", "Base frequency in Hz of the synthesized patterns.", \.frequency,
      in: 100...8000),
    .number(
      "ramp", "Seconds over which the alert's gain rises to full (0 = at once).", \.ramp,
      in: 0...60),
  ]
}

extension FindPhoneConfig: ConfigSection {
  public static let section = "find-phone"
  public static let summary = "Ringing the laptop when a device asks."
  public static let keys: [ConfigKey<FindPhoneConfig>] = [
    .number("volume", "Volume (0-1) the alert raises the output to.", \.volume, in: 0...1),
    .number(
      "headphone_volume", "Cap (0-1) on that volume when the output is headphones.",
      \.headphoneVolume, in: 0...1),
    .number("timeout", "Seconds after which ringing stops by itself.", \.timeout, in: 1...3600),
    .optionalText("sound", "Alert sound for find-phone; empty = [audio] sound.", \.sound),
  ]
}

extension ControlConfig: ConfigSection {
  public static let section = "control"
  public static let summary = "The local control socket."
  public static let keys: [ConfigKey<ControlConfig>] = [
    .text("socket", "Unix socket path (user agent: $XDG_RUNTIME_DIR/earshot.sock).", \.socket),
    .optionalText(
      "group", "Group allowed to use the socket besides root and the agent's user; empty = none.",
      \.group),
    .integer(
      "max_clients",
      "Clients served at once (more are refused with an error); at most the open-file limit allows.",
      \.maxClients, in: 1...1_000_000),
  ]
}

extension StateConfig: ConfigSection {
  public static let section = "state"
  public static let summary = "Where region states survive restarts."
  public static let keys: [ConfigKey<StateConfig>] = [
    .text("path", "State file (user agent: $XDG_STATE_HOME/earshot/state).", \.path)
  ]
}

extension MQTTConfig: ConfigSection {
  public static let section = "mqtt"
  public static let summary = "Publishing to an MQTT broker, with Home Assistant discovery."
  public static let keys: [ConfigKey<MQTTConfig>] = [
    .optionalText("host", "Broker host name or address; empty = MQTT off.", \.host),
    .integer("port", "Broker port (1883, or 8883 with TLS).", \.port, in: 1...65535),
    .optionalText("username", "User name, if the broker wants one.", \.username),
    .optionalText("password_file", "File whose first line is the password.", \.passwordFile),
    .bool("tls", "Use TLS (set ca, and cert/key for client certificates).", \.tls),
    .optionalText("ca", "CA certificate file for TLS; empty = the system's CAs.", \.ca),
    .optionalText("cert", "Client certificate file for TLS.", \.cert),
    .optionalText("key", "Client key file for TLS.", \.key),
    .optionalText(
      "client_id", "MQTT client id; empty = earshot-HOSTNAME-USER-PID (unique per agent).",
      \.clientID),
    .optionalText("base_topic", "Topic prefix; empty = earshot/HOSTNAME.", \.baseTopic),
    .integer("qos", "QoS of published messages (0, 1 or 2).", \.qos, in: 0...2),
    .bool("retain", "Retain state messages (region states, beacons, volume).", \.retain),
    .bool("discovery", "Publish Home Assistant discovery configs.", \.discovery),
    .text("discovery_prefix", "Home Assistant's discovery prefix.", \.discoveryPrefix),
    .number(
      "beacon_interval", "Seconds between two distance updates of one beacon.",
      \.beaconInterval, in: 0...3600),
  ]
}

extension ESPHomeConfig: ConfigSection {
  public static let section = "esphome"
  public static let summary =
    "A Home Assistant Bluetooth proxy: the ESPHome native API, raw advertisements from the shared scanner."
  public static let keys: [ConfigKey<ESPHomeConfig>] = [
    .bool("enabled", "Serve the ESPHome native API (docs/esphome-proxy.md).", \.enabled),
    .text(
      "bind", "Address to listen on: 127.0.0.1 = this machine only; 0.0.0.0 or :: = the network.",
      \.bind),
    .integer("port", "TCP port (Home Assistant's default is 6053).", \.port, in: 1...65535),
    .optionalText(
      "key_file", "File holding the base64 32-byte encryption key Home Assistant is given.",
      \.keyFile),
    .bool(
      "insecure_plaintext",
      "Serve without encryption when no key_file is set (anyone who can connect reads the advertisements).",
      \.insecurePlaintext),
    .optionalText("name", "Node name shown in Home Assistant; empty = from the host name.", \.name),
    .integer("max_clients", "Clients served at once; more are refused.", \.maxClients, in: 1...64),
    .bool(
      "mdns",
      "Announce as _esphomelib._tcp through Avahi where avahi-daemon runs (not on a loopback bind).",
      \.mdns),
  ]
}

extension TrackersConfig: ConfigSection {
  public static let section = "trackers"
  public static let summary =
    "Unknown trackers travelling with the laptop: which follow (docs/trackers.md)."
  public static let keys: [ConfigKey<TrackersConfig>] = [
    .bool("enabled", "Watch the trackers the scanner hears for ones that follow.", \.enabled),
    .choice(
      "sensitivity",
      "high (30 min, 2 places), medium (60 min, 3 places) or low (120 min, 4 places) within 24 h.",
      \.sensitivity),
    .seconds(
      "retention", "Seconds a stranger's tracker is kept after it was last heard.", \.retention,
      upTo: 7 * 86_400),
    .init(
      "trusted",
      "Addresses of your own trackers (AA:BB:CC:DD:EE:FF), separated by spaces: they never alert.",
      set: { t, v in t.trusted = v.isEmpty ? [] : try ConfigValue.addresses(v) },
      show: { $0.trusted.map(\.description).joined(separator: " ") }),
    .init(
      "on_following",
      "Command run when a tracker starts to follow, split like a shell would, run without one; empty = none.",
      set: { t, v in t.onFollowing = v.isEmpty ? nil : try ConfigValue.command(v) },
      show: { $0.onFollowing.map(ShellWords.join) ?? "" }),
    .init(
      "hook_timeout", "Seconds the on_following hook may run before it is killed.",
      set: { t, v in t.hookTimeout = try ConfigValue.double(v, in: 0.1...3600) },
      show: { ConfigValue.show($0.hookTimeout) }),
    .bool(
      "mqtt",
      "Publish trackers that follow to [mqtt] (Home Assistant: a sensor of those following now, an event per new one); off = nothing about them leaves the machine.",
      \.mqtt),
    .init(
      "span",
      "Seconds a separated tracker must be heard across before it follows (up to 86400); empty = the sensitivity's; a tag that says no state (Tile) needs twice it.",
      set: { t, v in t.span = v.isEmpty ? nil : try ConfigValue.seconds(v, upTo: 86_400) },
      show: { $0.span.map(ConfigValue.show) ?? "" }),
    .init(
      "places",
      "Distinct places it must be heard in (2-64); empty = the sensitivity's; a tag that says no state needs one more.",
      set: { t, v in t.places = v.isEmpty ? nil : try ConfigValue.integer(v, in: 2...64) },
      show: { $0.places.map(String.init) ?? "" }),
    .seconds(
      "spacing", "Seconds between two sightings of a tracker counted in one place.", \.spacing,
      upTo: 3600),
    .bool(
      "wifi",
      "Take the access points of the Wi-Fi scans the system makes (nl80211; Earshot never scans) as places, and a change of Wi-Fi network as a move.",
      \.wifi),
  ]
}

extension ProximityLogConfig: ConfigSection {
  public static let section = "log"
  public static let summary = "The proximity log: a SQLite history of region events and sightings."
  public static let keys: [ConfigKey<ProximityLogConfig>] = [
    .bool(
      "enabled", "Keep the log (a history of who was near is personal data: off by default).",
      \.enabled),
    .optionalText(
      "path",
      "SQLite file; empty = /var/lib/earshot/proximity.sqlite, or "
        + "$XDG_STATE_HOME/earshot/proximity.sqlite for a user agent.", \.path),
    .number(
      "interval", "Seconds per sighting row: one row per beacon per interval.", \.interval,
      in: 1...3600),
    .number(
      "keep_days", "Days of history kept (older rows are deleted hourly); 0 keeps all.",
      \.keepDays, in: 0...36500),
  ]
}

extension Config {
  /// Keys of `[region "NAME"]`.
  public static let regionKeys: [ConfigKey<RegionConfig>] = [
    .init(
      "uuid",
      "The iBeacon proximity UUID (a region needs a uuid, an altbeacon, an eddystone, a beacon, a device, an irk or a tag).",
      set: { r, v in r.uuid = try ConfigValue.uuid(v) },
      show: { $0.format == .iBeacon ? $0.uuid?.description ?? "" : "" }),
    .init(
      "altbeacon",
      "AltBeacons instead: ID1[:ID2[:ID3]], a UUID then numbers 0-65535 (any beacon code's company).",
      set: { r, v in
        let a = try ConfigValue.altBeacon(v)
        r.format = .altBeacon
        r.uuid = a.uuid
        r.major = a.id2
        r.minor = a.id3
      },
      show: { r in
        guard r.format == .altBeacon, let u = r.uuid else { return "" }
        return ([u.description] + [r.major, r.minor].compactMap { $0.map(String.init) })
          .joined(separator: ":")
      }),
    .init(
      "eddystone",
      "Eddystone-UIDs instead: NAMESPACE[:INSTANCE], 20 and 12 hex digits; no instance = any.",
      set: { r, v in
        let e = try ConfigValue.eddystone(v)
        r.format = .eddystoneUID
        r.uuid =
          TrackedID(
            eddystoneNamespace: e.namespace,
            instance: e.instance ?? BeaconBytes(hex: "000000000000")!
          ).uuid
        r.matchesInstance = e.instance != nil
        r.major = nil
        r.minor = nil
      },
      show: { r in
        guard r.format == .eddystoneUID, let u = r.uuid else { return "" }
        let id = TrackedID(kind: .eddystoneUID, uuid: u, major: 0, minor: 0)
        return id.text(field: 0) + (r.matchesInstance ? ":" + id.text(field: 1) : "")
      }),
    .init(
      "beacon",
      "Beacons of any format as KIND:FIELDS, the leading fields given: a [layout \"NAME\"]'s "
        + "name (acme:010203040506), altbeacon, eddystone, or UUID[:MAJOR[:MINOR]].",
      set: { r, v in r.beaconWritten = try ConfigValue.nonEmpty(v) },
      show: { $0.beaconMatch?.description ?? $0.beaconWritten ?? "" }),
    .init(
      "major", "Narrow the region to this major (0-65535); empty = any major.",
      set: { r, v in r.major = UInt16(try ConfigValue.integer(v, in: 0...65535)) },
      show: { $0.format == .iBeacon ? $0.major.map { String($0) } ?? "" : "" }),
    .init(
      "minor", "Narrow further to this minor (needs major); empty = any minor.",
      set: { r, v in r.minor = UInt16(try ConfigValue.integer(v, in: 0...65535)) },
      show: { $0.format == .iBeacon ? $0.minor.map { String($0) } ?? "" : "" }),
    .init(
      "device",
      "Identity addresses of bonded devices (AA:BB:CC:DD:EE:FF), separated by spaces; any of them counts.",
      set: { r, v in r.devices = try ConfigValue.addresses(v) },
      show: { $0.devices.map(\.description).joined(separator: " ") }),
    .init(
      "irk",
      "Identity resolving keys (32 hex digits, most significant byte first), separated by spaces.",
      set: { r, v in r.irks = try ConfigValue.identityKeys(v) },
      show: { $0.irks.map(\.hex).joined(separator: " ") }),
    .init(
      "tag",
      "Names of [tag \"NAME\"] sections, separated by spaces: a connected tag is inside (earshot run).",
      set: { r, v in r.tags = try ConfigValue.tagNames(v) },
      show: { $0.tags.joined(separator: " ") }),
    .init(
      "power",
      "dBm a device is heard at 1 m when it advertises no TX power (devices only).",
      set: { r, v in r.power = Int8(try ConfigValue.integer(v, in: -100...20)) },
      show: { String($0.power) }),
    .init(
      "exit_after", "Seconds with no report before exit, or auto; default [monitor] exit_after.",
      set: { r, v in r.exitAfter = try ExitAfter.parse(v) },
      show: { $0.exitAfter?.description ?? "" }),
    .init(
      "on_enter", "Command run on enter: split like a shell would, run without one; empty = none.",
      set: { r, v in r.onEnter = try ConfigValue.command(v) },
      show: { $0.onEnter.map(ShellWords.join) ?? "" }),
    .init(
      "on_exit", "Command run on exit, the same way; empty = none.",
      set: { r, v in r.onExit = try ConfigValue.command(v) },
      show: { $0.onExit.map(ShellWords.join) ?? "" }),
    .init(
      "hook_timeout", "Seconds a hook may run before it is killed.",
      set: { r, v in r.hookTimeout = try ConfigValue.double(v, in: 0.1...3600) },
      show: { ConfigValue.show($0.hookTimeout) }),
  ]
}
