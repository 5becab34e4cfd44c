/// One BSS of a Wi-Fi scan as the kernel keeps it (nl80211's scan dump).
public struct WiFiBSS: Hashable, Sendable {
  public var bssid: [UInt8]
  /// When the kernel last heard it, on CLOCK_BOOTTIME (nil: not said).
  public var lastSeen: MonotonicTime?
  /// The laptop is associated with it.
  public var associated: Bool
  /// Its SSID element's bytes (nil: none in its elements).
  public var ssid: [UInt8]?

  public init(bssid: [UInt8], lastSeen: MonotonicTime?, associated: Bool, ssid: [UInt8]?) {
    self.bssid = bssid
    self.lastSeen = lastSeen
    self.associated = associated
    self.ssid = ssid
  }

  /// `aa:bb:cc:dd:ee:ff`, the form a place's mark keeps.
  public var bssidText: String {
    bssid.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: ":")
  }
}

/// Reading the information elements a BSS advertises (IEEE 802.11:
/// element id, length, value, repeated).
public enum WiFiElements {
  /// The SSID element (id 0) of `elements`, at most 32 bytes; nil when the
  /// elements hold none or do not walk cleanly up to it.
  public static func ssid(in elements: UnsafeRawBufferPointer) -> [UInt8]? {
    var r = ByteReader(elements)
    while !r.isAtEnd {
      guard let id = r.u8(), let length = r.u8(), let value = r.take(Int(length)) else {
        return nil
      }
      if id == 0 { return length <= 32 ? Array(value) : nil }
    }
    return nil
  }
}

/// What the laptop's own sources say about moving, turned into the
/// tracker watch's events (docs/trackers.md, "Places, live"): the access
/// points of each Wi-Fi scan, a change of the network it is on, mains
/// unplugged. Pure: the shell hands it what nl80211 and sysfs say.
///
/// Guarantees:
/// - A scan's access points are the BSSes the kernel heard since that scan
///   was triggered (older ones linger in its cache for half a minute and
///   may be from the place before); without the trigger's time, those heard
///   within `freshness`. At most `maximumAccessPoints` (the strongest is
///   not known here: the first in the dump), the rest counted.
/// - The network is the SSID of the BSS the laptop is associated with, per
///   wireless interface. A change from one network to another is a move
///   (`networkChanged`); joining a network after none, or leaving one, is
///   not (a disconnect is as often a glitch; the next network says it).
///   Roaming between access points of one network is no move either.
/// - Mains going from online to offline is a move (`unplugged`); the
///   first reading, or a supply that cannot be read, is not.
/// - Memory is bounded: at most `maximumInterfaces` interfaces are
///   remembered (the one changed longest ago forgotten first).
public struct LaptopSignals: Sendable {
  public struct Settings: Sendable, Equatable {
    public var freshness: Duration = .seconds(10)
    public var maximumAccessPoints = 256
    public var maximumInterfaces = 16
    public init() {}
  }

  public let settings: Settings
  private var networks: [Int32: (ssid: [UInt8], at: UInt64)] = [:]
  private var changes: UInt64 = 0
  private var mainsOnline: Bool?
  /// BSSes left out of scans because of `maximumAccessPoints`.
  public private(set) var droppedAccessPoints = 0

  public init(settings: Settings = Settings()) { self.settings = settings }

  /// The access points of a scan that ended at `now` (`triggered`: when
  /// it began, if the shell saw it begin).
  public mutating func accessPoints(
    _ bss: [WiFiBSS], triggered: MonotonicTime?, now: MonotonicTime
  ) -> Set<String> {
    let since =
      triggered
      ?? MonotonicTime(
        nanos: now.nanos &- min(now.nanos, UInt64(settings.freshness / .nanoseconds(1))))
    var out = Set<String>()
    for b in bss where b.lastSeen.map({ $0 >= since }) ?? false {
      guard out.count < settings.maximumAccessPoints else {
        droppedAccessPoints += 1
        continue
      }
      out.insert(b.bssidText)
    }
    return out
  }

  /// The BSSes of interface `interface` as a dump lists them: a move if
  /// the network it is associated with is another than the one before.
  public mutating func network(_ bss: [WiFiBSS], interface: Int32) -> LaptopMove? {
    guard let ssid = bss.first(where: \.associated)?.ssid, !ssid.isEmpty else { return nil }
    changes += 1
    let before = networks[interface]?.ssid
    networks[interface] = (ssid, changes)
    if networks.count > settings.maximumInterfaces,
      let oldest = networks.min(by: { $0.value.at < $1.value.at })?.key
    {
      networks[oldest] = nil
    }
    return before.map { $0 != ssid ? .networkChanged : nil } ?? nil
  }

  /// The mains supply's `online` now (nil: none, or unreadable).
  public mutating func mains(online: Bool?) -> LaptopMove? {
    guard let online else { return nil }
    defer { mainsOnline = online }
    return mainsOnline == true && !online ? .unplugged : nil
  }
}

extension LaptopSignals {
  /// Whether the laptop is on an external supply, by sysfs's entries:
  /// any mains, USB or wireless charger online; nil when it has none that
  /// says (a desktop without `online`, a container).
  public static func mainsOnline(_ supplies: [PowerSupplyEntry]) -> Bool? {
    let external = supplies.filter(\.isExternal).compactMap(\.online)
    return external.isEmpty ? nil : external.contains(true)
  }
}
