import EarshotCore

/// The central side of GATT through bluetoothd's D-Bus API: connecting to
/// a device, finding its characteristics by UUID under the device's object
/// path, notifications, reads and writes. bluetoothd owns the link (and
/// its pairing and bonds); this only asks. Everything runs on the loop.
public final class BlueZCentral {
  /// A device's link went down (Device1 Connected false, or the object or
  /// bluetoothd went away): its object path.
  public var onDisconnect: ((String) -> Void)?
  /// A characteristic's value changed (a notification): its path and value.
  public var onValue: ((String, [UInt8]) -> Void)?
  /// bluetoothd exported an object (a device, service or characteristic): its path.
  public var onAdded: ((String) -> Void)?
  /// bluetoothd appeared on the bus again (after a restart).
  public var onBlueZBack: (() -> Void)?

  let bus: DBusConnection
  private let loop: EventLoop
  /// Paths waiting for ServicesResolved: callback and its timeout.
  private var resolveWaiters:
    [String: (done: (Result<Void, TagFailure>) -> Void, timer: EventLoop.TimerID)] = [:]
  /// Adapters this started a discovery on.
  private var discovering: Set<String> = []

  static let device1 = "org.bluez.Device1"
  static let chrc = "org.bluez.GattCharacteristic1"
  static let props = "org.freedesktop.DBus.Properties"

  /// `busAddress` nil: the system bus.
  public init(loop: EventLoop, busAddress: String? = nil) throws {
    self.loop = loop
    bus = try DBusConnection(loop: loop, address: busAddress)
    try bus.match(
      "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"
    ) { [weak self] path, _, args in self?.propertiesChanged(path, args) }
    try bus.match(
      "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.ObjectManager',member='InterfacesRemoved'"
    ) { [weak self] _, _, args in
      guard let self, args.count == 2, let path = args[0].stringValue,
        args[1].arrayItems.contains(where: { $0.stringValue == Self.device1 })
      else { return }
      self.failWaiter(path, "the device was removed from bluetoothd")
      self.onDisconnect?(path)
    }
    try bus.match(
      "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.ObjectManager',member='InterfacesAdded'"
    ) { [weak self] _, _, args in
      guard let path = args.first?.stringValue else { return }
      self?.onAdded?(path)
    }
    try bus.watchOwner(of: "org.bluez") { [weak self] present in
      guard let self else { return }
      if present {
        self.discovering = []
        self.onBlueZBack?()
      } else {
        for path in self.resolveWaiters.keys.sorted() { self.failWaiter(path, "bluetoothd left") }
        self.onDisconnect?("/org/bluez")
      }
    }
  }

  deinit { bus.close() }

  private func propertiesChanged(_ path: String, _ args: [DBusValue]) {
    guard args.count >= 2, let iface = args[0].stringValue else { return }
    if iface == Self.device1 {
      if args[1]["Connected"]?.boolValue == false {
        failWaiter(path, "the link dropped while services were resolved")
        onDisconnect?(path)
      }
      if args[1]["ServicesResolved"]?.boolValue == true,
        let w = resolveWaiters.removeValue(forKey: path)
      {
        loop.cancel(w.timer)
        w.done(.success(()))
      }
    } else if iface == Self.chrc, let value = args[1]["Value"]?.bytesValue {
      onValue?(path, value)
    }
  }

  private func failWaiter(_ path: String, _ why: String) {
    for (p, w) in resolveWaiters where p == path || p.hasPrefix(path + "/") {
      resolveWaiters[p] = nil
      loop.cancel(w.timer)
      w.done(.failure(TagFailure(why)))
    }
  }

  // MARK: Objects

  /// bluetoothd's object tree: path → interface → properties.
  public typealias Objects = [String: [String: DBusValue]]

  public func objects(_ done: @escaping (Result<Objects, TagFailure>) -> Void) {
    bus.call(
      destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.ObjectManager",
      member: "GetManagedObjects"
    ) { result in
      switch result {
      case .failure(let e):
        done(.failure(TagFailure("cannot reach bluetoothd (is it running?): \(e)")))
      case .success(let values):
        var out: Objects = [:]
        for (path, ifaces) in values.first?.entries ?? [] {
          var m: [String: DBusValue] = [:]
          for (name, props) in ifaces.entries { m[name] = props }
          out[path] = m
        }
        done(.success(out))
      }
    }
  }

  /// The adapter's path (`/org/bluez/hci0`): the named one, else the first.
  public static func adapter(_ objects: Objects, named: String?) -> Result<String, TagFailure> {
    let adapters = objects.filter { $0.value["org.bluez.Adapter1"] != nil }.map(\.key).sorted()
    if let named {
      if adapters.contains("/org/bluez/" + named) { return .success("/org/bluez/" + named) }
      return .failure(
        TagFailure(
          "BlueZ has no adapter \(named) (found: \(adapters.isEmpty ? "none" : adapters.joined(separator: ", ")))"
        ))
    }
    guard let first = adapters.first else { return .failure(TagFailure("BlueZ has no adapter")) }
    return .success(first)
  }

  /// BlueZ names a device's object after its address.
  public static func devicePath(adapter: String, _ address: BDAddress) -> String {
    adapter + "/dev_" + address.description.replacingColons()
  }

  /// Every device object with this address, on any adapter.
  public static func devices(_ objects: Objects, address: BDAddress) -> [String] {
    objects.filter {
      $0.value[device1]?["Address"]?.stringValue.flatMap { BDAddress($0) } == address
    }
    .map(\.key).sorted()
  }

  /// Characteristics under a device, by (service UUID, characteristic UUID).
  public static func characteristics(_ objects: Objects, device: String) -> [String: String] {
    var services: [String: String] = [:]  // path → UUID
    for (path, ifaces) in objects where path.hasPrefix(device + "/") {
      if let uuid = ifaces["org.bluez.GattService1"]?["UUID"]?.stringValue {
        services[path] = uuid.lowercased()
      }
    }
    var out: [String: String] = [:]
    for (path, ifaces) in objects.sorted(by: { $0.key < $1.key }) where path.hasPrefix(device + "/")
    {
      guard let c = ifaces[chrc], let uuid = c["UUID"]?.stringValue,
        let service = c["Service"]?.stringValue, let serviceUUID = services[service]
      else { continue }
      let key = serviceUUID + "/" + uuid.lowercased()
      if out[key] == nil { out[key] = path }
    }
    return out
  }

  /// How to write each characteristic under a device: "request" (with
  /// response: a refusal is heard) when its flags allow, else "command".
  public static func writeTypes(_ objects: Objects, device: String) -> [String: String] {
    var out: [String: String] = [:]
    for (path, ifaces) in objects where path.hasPrefix(device + "/") {
      guard let flags = ifaces[chrc]?["Flags"]?.arrayItems.compactMap(\.stringValue) else {
        continue
      }
      if flags.contains("write") {
        out[path] = "request"
      } else if flags.contains("write-without-response") {
        out[path] = "command"
      }
    }
    return out
  }

  public static func key(_ service: String, _ characteristic: String) -> String {
    service + "/" + characteristic
  }

  // MARK: Calls

  /// Scans for LE devices on `adapter` so bluetoothd learns of a device it
  /// has never seen (a tag that was never paired).
  public func discover(adapter: String) {
    guard discovering.insert(adapter).inserted else { return }
    bus.call(
      destination: "org.bluez", path: adapter, interface: "org.bluez.Adapter1",
      member: "SetDiscoveryFilter", [.properties([("Transport", .string("le"))])]
    ) { [weak self] _ in
      self?.bus.call(
        destination: "org.bluez", path: adapter, interface: "org.bluez.Adapter1",
        member: "StartDiscovery"
      ) { [weak self] result in
        if case .failure(let e) = result, !e.isRemote("org.bluez.Error.InProgress") {
          self?.discovering.remove(adapter)
        }
      }
    }
  }

  /// Stops a discovery this started (it slows connections down).
  public func stopDiscovery(adapter: String) {
    guard discovering.remove(adapter) != nil else { return }
    bus.call(
      destination: "org.bluez", path: adapter, interface: "org.bluez.Adapter1",
      member: "StopDiscovery"
    ) { _ in }
  }

  /// Connects (unless connected) and waits until bluetoothd has resolved
  /// the device's services, at most `timeout` seconds.
  public func connect(
    _ device: String, timeout: Double = 30, _ done: @escaping (Result<Void, TagFailure>) -> Void
  ) {
    bus.call(
      destination: "org.bluez", path: device, interface: Self.device1, member: "Connect",
      timeoutMicros: UInt64(timeout * 1e6)
    ) { [weak self] result in
      guard let self else { return }
      if case .failure(let e) = result, !e.isRemote("org.bluez.Error.AlreadyConnected") {
        done(.failure(TagFailure(Self.text(e))))
        return
      }
      self.waitResolved(device, timeout: timeout, done)
    }
  }

  private func waitResolved(
    _ device: String, timeout: Double, _ done: @escaping (Result<Void, TagFailure>) -> Void
  ) {
    failWaiter(device, "superseded")
    let timer = loop.after(seconds: timeout) { [weak self] in
      guard let self, let w = self.resolveWaiters.removeValue(forKey: device) else { return }
      w.done(.failure(TagFailure("services not resolved within \(ConfigValue.show(timeout)) s")))
    }
    resolveWaiters[device] = (done, timer)
    // Already resolved: no signal will come.
    bus.call(
      destination: "org.bluez", path: device, interface: Self.props, member: "Get",
      [.string(Self.device1), .string("ServicesResolved")]
    ) { [weak self] result in
      guard let self, (try? result.get())?.first?.boolValue == true,
        let w = self.resolveWaiters.removeValue(forKey: device)
      else { return }
      self.loop.cancel(w.timer)
      w.done(.success(()))
    }
  }

  /// Drops the link (bluetoothd answers at once if there is none, else
  /// once the link is down); `done` runs at its answer, whatever it is.
  public func disconnect(_ device: String, done: @escaping () -> Void = {}) {
    bus.call(destination: "org.bluez", path: device, interface: Self.device1, member: "Disconnect")
    { _ in done() }
  }

  public func startNotify(_ chrc: String, _ done: @escaping (Result<Void, TagFailure>) -> Void) {
    bus.call(destination: "org.bluez", path: chrc, interface: Self.chrc, member: "StartNotify") {
      result in
      switch result {
      case .success: done(.success(()))
      case .failure(let e) where e.isRemote("org.bluez.Error.InProgress"): done(.success(()))
      case .failure(let e): done(.failure(TagFailure(Self.text(e))))
      }
    }
  }

  /// `type`: "request" or "command"; nil lets bluetoothd choose (it
  /// prefers a command, whose refusal nobody hears).
  public func write(
    _ chrc: String, _ value: [UInt8], type: String? = nil,
    _ done: @escaping (Result<Void, TagFailure>) -> Void
  ) {
    bus.call(
      destination: "org.bluez", path: chrc, interface: Self.chrc, member: "WriteValue",
      [.bytes(value), .properties(type.map { [("type", .string($0))] } ?? [])]
    ) { result in
      switch result {
      case .success: done(.success(()))
      case .failure(let e): done(.failure(TagFailure(Self.text(e))))
      }
    }
  }

  public func read(_ chrc: String, _ done: @escaping (Result<[UInt8], TagFailure>) -> Void) {
    bus.call(
      destination: "org.bluez", path: chrc, interface: Self.chrc, member: "ReadValue",
      [.properties([])]
    ) { result in
      switch result {
      case .success(let values): done(.success(values.first?.bytesValue ?? []))
      case .failure(let e): done(.failure(TagFailure(Self.text(e))))
      }
    }
  }

  /// A D-Bus error as one short phrase: BlueZ's name and message.
  static func text(_ e: DBusError) -> String {
    if case .remote(let name, let message) = e {
      let short = name.hasPrefix("org.bluez.Error.") ? String(name.dropFirst(16)) : name
      return message.isEmpty ? short : "\(short): \(message)"
    }
    return "\(e)"
  }
}

extension String {
  fileprivate func replacingColons() -> String {
    String(map { $0 == ":" ? "_" : $0 })
  }
}
