import EarshotCore

/// The proxy announced over mDNS as `_esphomelib._tcp` through Avahi's
/// D-Bus API (Home Assistant discovers it and offers to add it), with the
/// TXT records ESPHome publishes. Where avahi-daemon does not run it stays
/// silent; when avahi-daemon (re)starts, the service is published again.
public final class AvahiAnnouncement {
  public static let serviceType = "_esphomelib._tcp"
  static let avahi = "org.freedesktop.Avahi"
  private let bus: DBusConnection
  private let name: String
  private let port: UInt16
  private let txt: [(String, String)]
  private let log: (String) -> Void
  /// The entry group's path once published.
  public private(set) var group: String?
  public var onPublished: ((String) -> Void)?

  public init(
    bus: DBusConnection, name: String, port: Int, txt: [(String, String)],
    log: @escaping (String) -> Void
  ) {
    self.bus = bus
    self.name = name
    self.port = UInt16(port)
    self.txt = txt
    self.log = log
  }

  /// ESPHome's TXT records for a device.
  public static func records(_ info: ESPHomeDeviceInfo) -> [(String, String)] {
    var r: [(String, String)] = [
      ("friendly_name", info.friendlyName), ("version", info.esphomeVersion),
      ("mac", info.macAddress.lowercased().filter { $0 != ":" }), ("platform", "Linux"),
      ("board", "earshot"), ("network", "ethernet"), ("project_name", info.projectName),
      ("project_version", info.projectVersion),
    ]
    if info.encrypted { r.append(("api_encryption", "Noise_NNpsk0_25519_ChaChaPoly_SHA256")) }
    return r
  }

  public func start() throws {
    try bus.watchOwner(of: Self.avahi) { [weak self] up in
      guard let self else { return }
      self.group = nil
      if up { self.publish() }
    }
    publish()
  }

  private func publish() {
    bus.call(
      destination: Self.avahi, path: "/", interface: "org.freedesktop.Avahi.Server",
      member: "EntryGroupNew"
    ) { [weak self] result in
      guard let self else { return }
      guard case .success(let values) = result, case .objectPath(let path)? = values.first else {
        // No avahi-daemon: silent (the proxy is added by address).
        return
      }
      let records = DBusValue.array(
        element: "ay", self.txt.map { .bytes(Array("\($0.0)=\($0.1)".utf8)) })
      self.bus.call(
        destination: Self.avahi, path: path, interface: "org.freedesktop.Avahi.EntryGroup",
        member: "AddService",
        [
          .int32(-1), .int32(-1), .uint32(0), .string(self.name), .string(Self.serviceType),
          .string(""), .string(""), .uint16(self.port), records,
        ]
      ) { [weak self] added in
        guard let self else { return }
        if case .failure(let e) = added {
          self.log("esphome: mDNS: Avahi refused the service '\(self.name)': \(e)")
          return
        }
        self.bus.call(
          destination: Self.avahi, path: path, interface: "org.freedesktop.Avahi.EntryGroup",
          member: "Commit"
        ) { [weak self] committed in
          guard let self else { return }
          if case .failure(let e) = committed {
            self.log("esphome: mDNS: Avahi did not publish '\(self.name)': \(e)")
            return
          }
          self.group = path
          self.log("esphome: announced '\(self.name)' as \(Self.serviceType) through Avahi")
          self.onPublished?(path)
        }
      }
    }
  }
}
