import EarshotCore

/// The BLE device link's peripheral side, through BlueZ's D-Bus API: a GATT
/// application (one service, a write and a notify characteristic; a second
/// service for the legacy protocol when enabled; the standard Immediate
/// Alert service, so Find Me locators can ring the laptop) and an
/// advertisement.
///
/// Writes are checked against the policy (bonded, allowlist) with the
/// writer's address from WriteValue's `device` option and Device1's
/// `Bonded`, then decoded; malformed or refused writes are answered with an
/// ATT error. Decoded requests go to `onEvent`; answer each with `send(_:)`.
///
/// BlueZ sends a characteristic's notifications to every device that
/// subscribed: it has no per-device notify in its D-Bus API. See the README.
public final class BLELinkServer {
  public enum Event: Equatable, Sendable {
    /// A request from an allowed device: answer it with `send(_:)`.
    case request(LinkRequestFrame, from: BDAddress)
    /// Legacy mode: `.volume` wants `sendLegacyVolume`, `.setVolume` a mixer
    /// change (the write is already acknowledged). `.name` is answered here.
    case legacy(LegacyRemoteVolume.Request, from: BDAddress)
    /// A device enabled or disabled notifications (any device: BlueZ does
    /// not say which).
    case notifying(Bool)
    /// A device's connection ended (BlueZ's Device1 `Connected` went false).
    case disconnected(BDAddress)
    /// An allowed device wrote the Immediate Alert service's Alert Level
    /// (the write is already acknowledged; it has no answer).
    case alert(AlertLevel, from: BDAddress)
  }

  public var onEvent: ((Event) -> Void)?
  /// One line per thing worth logging (registration, refusals, malformed writes).
  public var onLog: ((String) -> Void)?
  /// Registration done: the adapter's path, or why it failed.
  public var onReady: ((Result<String, DBusError>) -> Void)?

  public let config: LinkConfig
  public let name: String
  public let features: LinkFeatures

  private let loop: EventLoop
  private let bus: DBusConnection
  private let policy: LinkPolicy
  private var refusals = RefusalLog()
  private var adapterPath: String?
  private var notificationSeq: UInt8 = 0
  private var registered = false
  private var advertised = false
  private var watchingBlueZ = false
  /// Registering again after bluetoothd came back: it may need a moment
  /// before its adapters serve GATT, so failures are retried a while.
  private var rejoinAttempts: Int? = nil
  private var rejoinTimer: EventLoop.TimerID?

  static let root = "/org/earshot/link"
  static let advertisementPath = "/org/earshot/advertisement"
  static let servicePath = root + "/service0"
  static let writePath = servicePath + "/write"
  static let notifyPath = servicePath + "/notify"
  static let legacyServicePath = root + "/service1"
  static let legacyWritePath = legacyServicePath + "/write"
  static let legacyNotifyPath = legacyServicePath + "/notify"
  static let alertServicePath = root + "/service2"
  static let alertLevelPath = alertServicePath + "/alert_level"

  static let chrcInterface = "org.bluez.GattCharacteristic1"
  static let propsInterface = "org.freedesktop.DBus.Properties"

  /// `busAddress` nil: the system bus.
  public init(
    loop: EventLoop, config: LinkConfig, name: String,
    features: LinkFeatures = [.find, .volume], busAddress: String? = nil
  ) throws {
    self.loop = loop
    self.config = config
    self.name = name
    self.features = features
    policy = LinkPolicy(config: config)
    bus = try DBusConnection(loop: loop, address: busAddress)
    try bus.serve(prefix: "/org/earshot") { [unowned self] call in self.handle(call) }
  }

  deinit { bus.close() }

  /// This connection's unique bus name.
  public var busName: String { bus.uniqueName }

  // MARK: Registration

  /// Finds the adapter, registers the application, then the advertisement;
  /// and does it again whenever bluetoothd (re)appears on the bus, since
  /// its registrations die with it.
  public func start() {
    watchBlueZ()
    register()
  }

  private func watchBlueZ() {
    guard !watchingBlueZ else { return }
    watchingBlueZ = true
    do {
      try bus.watchOwner(of: "org.bluez") { [weak self] in self?.blueZChanged(present: $0) }
      try bus.match(
        "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='org.bluez.Device1'"
      ) { [weak self] path, _, args in
        // Only devices of the adapter the link serves (one bluetoothd
        // has every adapter's devices).
        guard let self, let adapter = self.adapterPath, path.hasPrefix(adapter + "/"),
          args.count >= 2, args[1]["Connected"]?.boolValue == false,
          let address = Self.address(ofDevicePath: path)
        else { return }
        self.onEvent?(.disconnected(address))
      }
    } catch {
      log(
        "link: cannot watch for bluetoothd restarts (\(error)); the link will not come back by itself"
      )
    }
  }

  /// BlueZ names a device's object after its address: .../dev_AA_BB_CC_DD_EE_FF.
  static func address(ofDevicePath path: String) -> BDAddress? {
    guard let last = path.split(separator: "/").last, last.hasPrefix("dev_") else { return nil }
    return BDAddress(String(last.dropFirst(4).map { $0 == "_" ? ":" : $0 }))
  }

  private func blueZChanged(present: Bool) {
    registered = false
    advertised = false
    if let t = rejoinTimer { loop.cancel(t) }
    rejoinTimer = nil
    if present {
      log("link: bluetoothd is on the bus; registering the link again")
      rejoinAttempts = 0
      register()
    } else {
      log("link: bluetoothd left the bus; the link is down until it is back")
      rejoinAttempts = nil
      onReady?(.failure(.serviceGone("org.bluez")))
    }
  }

  /// One registration attempt: replies to an older attempt (before a
  /// bluetoothd restart, or a retry) are ignored.
  private var attempt = 0

  /// Picks the adapter, then registers what is not registered yet (a
  /// retry goes on from the step that failed).
  private func register() {
    attempt += 1
    let current = attempt
    bus.call(
      destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.ObjectManager",
      member: "GetManagedObjects"
    ) { [weak self] result in
      guard let self, current == self.attempt else { return }
      switch result {
      case .failure(let e):
        self.fail(e, "cannot reach bluetoothd (is it running?)")
      case .success(let values):
        let adapters = (values.first?.entries ?? [])
          .filter { $0.1["org.bluez.GattManager1"] != nil }
          .map(\.0).sorted()
        let wanted = self.config.adapter.map { "/org/bluez/" + $0 }
        guard let path = wanted.map({ w in adapters.first { $0 == w } }) ?? adapters.first else {
          let which = self.config.adapter.map { "adapter \($0)" } ?? "any adapter"
          self.fail(
            .malformed("no GattManager1"),
            "BlueZ has no \(which) that serves GATT (found: \(adapters.isEmpty ? "none" : adapters.joined(separator: ", "))); check [link] adapter and that the adapter is powered"
          )
          return
        }
        if path != self.adapterPath { self.registered = false }
        self.adapterPath = path
        if self.registered {
          self.registerAdvertisement(path, withName: self.advertiseName, current)
        } else {
          self.registerApplication(path, current)
        }
      }
    }
  }

  /// BlueZ's answer when the object is already registered: as good as done.
  private static func alreadyDone(_ e: DBusError) -> Bool {
    e.isRemote("org.bluez.Error.AlreadyExists")
  }

  private func registerApplication(_ adapter: String, _ current: Int) {
    bus.call(
      destination: "org.bluez", path: adapter, interface: "org.bluez.GattManager1",
      member: "RegisterApplication", [.objectPath(Self.root), .properties([])]
    ) { [weak self] result in
      guard let self, current == self.attempt else { return }
      if case .failure(let e) = result, !Self.alreadyDone(e) {
        self.fail(e, "BlueZ refused the GATT application")
        return
      }
      self.registered = true
      self.log(
        "link: GATT service \(LinkUUID.service) and Immediate Alert (0x1802) registered on \(adapter)"
      )
      self.registerAdvertisement(adapter, withName: true, current)
    }
  }

  private var advertiseName = true

  private func registerAdvertisement(_ adapter: String, withName: Bool, _ current: Int) {
    advertiseName = withName
    bus.call(
      destination: "org.bluez", path: adapter, interface: "org.bluez.LEAdvertisingManager1",
      member: "RegisterAdvertisement", [.objectPath(Self.advertisementPath), .properties([])]
    ) { [weak self] result in
      guard let self, current == self.attempt else { return }
      if case .failure(let e) = result, !Self.alreadyDone(e) {
        if withName {
          // The name may not fit beside a 128-bit UUID in 31 bytes.
          self.log("link: advertising with the name failed (\(e)); trying without it")
          self.registerAdvertisement(adapter, withName: false, current)
        } else {
          self.fail(e, "BlueZ refused the advertisement")
        }
        return
      }
      self.advertised = true
      self.rejoinAttempts = nil
      self.log("link: advertising \(LinkUUID.service)\(withName ? " as \"\(self.name)\"" : "")")
      self.onReady?(.success(adapter))
    }
  }

  private func fail(_ e: DBusError, _ what: String) {
    log("link: \(what): \(e)")
    if let n = rejoinAttempts, n < 10 {
      rejoinAttempts = n + 1
      if let t = rejoinTimer { loop.cancel(t) }
      rejoinTimer = loop.after(seconds: 1) { [weak self] in
        self?.rejoinTimer = nil
        self?.register()
      }
      return
    }
    rejoinAttempts = nil
    onReady?(.failure(e))
  }

  /// Unregisters (best effort; bluetoothd also drops both when we disconnect).
  public func stop() {
    attempt += 1  // replies still on their way change nothing now
    if let t = rejoinTimer { loop.cancel(t) }
    rejoinTimer = nil
    rejoinAttempts = nil
    guard let adapter = adapterPath else { return }
    if advertised {
      bus.call(
        destination: "org.bluez", path: adapter, interface: "org.bluez.LEAdvertisingManager1",
        member: "UnregisterAdvertisement", [.objectPath(Self.advertisementPath)]
      ) { _ in }
    }
    if registered {
      bus.call(
        destination: "org.bluez", path: adapter, interface: "org.bluez.GattManager1",
        member: "UnregisterApplication", [.objectPath(Self.root)]
      ) { _ in }
    }
    advertised = false
    registered = false
  }

  // MARK: Sending

  /// The one response to a request.
  public func send(_ response: LinkResponse) {
    notify(Self.notifyPath, LinkCodec.encode(response))
  }

  /// An unsolicited notification (phone found, volume changed, ...).
  public func notify(_ notification: LinkNotification) {
    notificationSeq &+= 1
    notify(Self.notifyPath, LinkCodec.encode(notification, seq: notificationSeq))
  }

  /// Legacy mode: the volume, as REQ_VOLUME's answer or a change.
  public func sendLegacyVolume(_ level: Double) {
    guard config.legacyRemoteVolume else { return }
    notify(Self.legacyNotifyPath, LegacyRemoteVolume.encodeVolume(level))
  }

  private func notify(_ path: String, _ bytes: [UInt8]) {
    do {
      try bus.emit(
        path: path, interface: Self.propsInterface, member: "PropertiesChanged",
        [.string(Self.chrcInterface), .properties([("Value", .bytes(bytes))]), .strings([])])
    } catch {
      log("link: cannot notify: \(error)")
    }
  }

  private func log(_ line: String) { onLog?(line) }

  // MARK: The objects

  private func securityFlag(_ what: String) -> String {
    config.security == .authenticated ? "encrypt-authenticated-\(what)" : "encrypt-\(what)"
  }

  /// Every object: path → [(interface, properties)].
  private var objects: [(String, [(String, [(String, DBusValue)])])] {
    var list: [(String, [(String, [(String, DBusValue)])])] = [
      (
        Self.servicePath,
        [
          (
            "org.bluez.GattService1",
            [("UUID", .string(LinkUUID.service)), ("Primary", .bool(true))]
          )
        ]
      ),
      (
        Self.writePath,
        [
          (
            Self.chrcInterface,
            [
              ("UUID", .string(LinkUUID.write)), ("Service", .objectPath(Self.servicePath)),
              ("Flags", .strings([securityFlag("write")])),
            ]
          )
        ]
      ),
      (
        Self.notifyPath,
        [
          (
            Self.chrcInterface,
            [
              ("UUID", .string(LinkUUID.notify)), ("Service", .objectPath(Self.servicePath)),
              ("Flags", .strings([securityFlag("notify")])),
            ]
          )
        ]
      ),
    ]
    // Immediate Alert: Write Without Response is what the service requires
    // (Find Me locators use it; iOS sends none to a characteristic without
    // it); Write too, for locators that write with response.
    list += [
      (
        Self.alertServicePath,
        [
          (
            "org.bluez.GattService1",
            [("UUID", .string(AlertLevel.immediateAlertServiceUUID)), ("Primary", .bool(true))]
          )
        ]
      ),
      (
        Self.alertLevelPath,
        [
          (
            Self.chrcInterface,
            [
              ("UUID", .string(AlertLevel.characteristicUUID)),
              ("Service", .objectPath(Self.alertServicePath)),
              ("Flags", .strings(["write-without-response", securityFlag("write")])),
            ]
          )
        ]
      ),
    ]
    if config.legacyRemoteVolume {
      list += [
        (
          Self.legacyServicePath,
          [
            (
              "org.bluez.GattService1",
              [("UUID", .string(LinkUUID.legacyService)), ("Primary", .bool(true))]
            )
          ]
        ),
        (
          Self.legacyWritePath,
          [
            (
              Self.chrcInterface,
              [
                ("UUID", .string(LinkUUID.legacyWrite)),
                ("Service", .objectPath(Self.legacyServicePath)),
                ("Flags", .strings([securityFlag("write")])),
              ]
            )
          ]
        ),
        (
          Self.legacyNotifyPath,
          [
            (
              Self.chrcInterface,
              [
                ("UUID", .string(LinkUUID.legacyNotify)),
                ("Service", .objectPath(Self.legacyServicePath)),
                ("Flags", .strings([securityFlag("notify")])),
              ]
            )
          ]
        ),
      ]
    }
    var adv: [(String, DBusValue)] = [
      ("Type", .string("peripheral")), ("ServiceUUIDs", .strings([LinkUUID.service])),
      ("Discoverable", .bool(true)),
    ]
    if advertiseName { adv.append(("LocalName", .string(name))) }
    list.append((Self.advertisementPath, [("org.bluez.LEAdvertisement1", adv)]))
    return list
  }

  private func properties(_ path: String, _ interface: String) -> [(String, DBusValue)]? {
    objects.first { $0.0 == path }?.1.first { $0.0 == interface }?.1
  }

  private func handle(_ call: DBusCall) -> Bool {
    switch (call.interface, call.member) {
    case ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects"):
      let prefix = call.path == "/" ? "/" : call.path + "/"
      let tree = objects.filter { $0.0.hasPrefix(prefix) }.map { path, ifaces in
        (
          DBusValue.objectPath(path),
          DBusValue.dict(
            key: "s", value: "a{sv}", ifaces.map { (.string($0.0), .properties($0.1)) })
        )
      }
      call.reply([.dict(key: "o", value: "a{sa{sv}}", tree)])
      return true
    case (Self.propsInterface, "GetAll"):
      guard let iface = call.arguments.first?.stringValue,
        let props = properties(call.path, iface)
      else {
        call.replyError("org.freedesktop.DBus.Error.InvalidArgs", "no such interface here")
        return true
      }
      call.reply([.properties(props)])
      return true
    case (Self.propsInterface, "Get"):
      let args = call.arguments
      guard args.count == 2, let iface = args[0].stringValue, let key = args[1].stringValue,
        let value = properties(call.path, iface)?.first(where: { $0.0 == key })?.1
      else {
        call.replyError("org.freedesktop.DBus.Error.InvalidArgs", "no such property")
        return true
      }
      call.reply([.variant(value)])
      return true
    case (Self.chrcInterface, "WriteValue"):
      guard [Self.writePath, Self.legacyWritePath, Self.alertLevelPath].contains(call.path) else {
        return false
      }
      write(call)
      return true
    case (Self.chrcInterface, "StartNotify"), (Self.chrcInterface, "StopNotify"):
      guard call.path == Self.notifyPath || call.path == Self.legacyNotifyPath else {
        return false
      }
      call.reply()
      if call.path == Self.notifyPath { onEvent?(.notifying(call.member == "StartNotify")) }
      return true
    case (Self.chrcInterface, "ReadValue"):
      call.replyError("org.bluez.Error.NotSupported", "write requests, read notifications")
      return true
    case ("org.bluez.LEAdvertisement1", "Release"):
      advertised = false
      log("link: BlueZ released the advertisement")
      call.reply()
      return true
    default:
      return false
    }
  }

  // MARK: Writes

  private func write(_ call: DBusCall) {
    let args = call.arguments
    guard args.count == 2, let value = args[0].bytesValue else {
      call.replyError("org.bluez.Error.InvalidArguments", "WriteValue(ay, a{sv}) expected")
      return
    }
    let options = args[1]
    let offset = Int(options["offset"]?.uint16Value ?? 0)
    guard let device = options["device"]?.stringValue else {
      // No device: nobody to check, so nobody to trust.
      let e = BlueZGattError.dbusError(forATT: LinkATTError.insufficientAuthorization)
      log("link: refused a write without a device (BlueZ gave no 'device' option)")
      call.replyError(e.name, e.message)
      return
    }
    bus.call(
      destination: "org.bluez", path: device, interface: Self.propsInterface, member: "GetAll",
      [.string("org.bluez.Device1")]
    ) { [weak self] result in
      guard let self else { return }
      let props = (try? result.get())?.first
      guard let props, let address = props["Address"]?.stringValue.flatMap({ BDAddress($0) })
      else {
        let e = BlueZGattError.dbusError(forATT: LinkATTError.insufficientAuthorization)
        self.log("link: refused a write from \(device): cannot read its address")
        call.replyError(e.name, e.message)
        return
      }
      let bonded = props["Bonded"]?.boolValue ?? props["Paired"]?.boolValue ?? false
      // BlueZ only calls WriteValue once the link meets the flags' security.
      let writer = LinkPolicy.Writer(address: address, bonded: bonded, encrypted: true)
      if case .refuse(let why) = self.policy.decide(writer) {
        if let line = self.refusals.record(
          why, address: address, what: "a write", now: Clock.monotonicNanos())
        {
          self.log(line)
        }
        let e = BlueZGattError.dbusError(forATT: why.attErrorCode)
        call.replyError(e.name, e.message)
        return
      }
      switch call.path {
      case Self.legacyWritePath: self.legacyWrite(call, value, offset: offset, from: address)
      case Self.alertLevelPath:
        self.alertWrite(call, value, offset: offset, from: address)
      default: self.linkWrite(call, value, offset: offset, from: address)
      }
    }
  }

  private func reject(_ call: DBusCall, _ e: LinkDecodeError, from address: BDAddress) {
    log("link: malformed write from \(address): \(e) (ATT error 0x\(hexByte(e.attErrorCode)))")
    let d = BlueZGattError.dbusError(forATT: e.attErrorCode)
    call.replyError(d.name, d.message)
  }

  private func linkWrite(_ call: DBusCall, _ value: [UInt8], offset: Int, from address: BDAddress) {
    switch LinkCodec.decodeRequest(value, offset: offset) {
    case .failure(let e): reject(call, e, from: address)
    case .success(let frame):
      call.reply()
      if frame.request == .info {
        send(.ok(.info(version: LinkCodec.version, features: features), to: frame))
      } else {
        onEvent?(.request(frame, from: address))
      }
    }
  }

  /// The Immediate Alert service: 0 none, 1 mild, 2 high; anything else
  /// is refused and changes nothing. The D-Bus error names the ATT error,
  /// but bluetoothd (5.66) acknowledges every write to a characteristic
  /// with the Write Without Response property before asking us
  /// (src/gatt-database.c, chrc_write_cb), so the writer never sees it.
  private func alertWrite(
    _ call: DBusCall, _ value: [UInt8], offset: Int, from address: BDAddress
  ) {
    switch AlertLevel.decode(value, offset: offset) {
    case .failure(let e):
      log("link: refused an Alert Level write from \(address): \(e); nothing changed")
      let d = BlueZGattError.dbusError(forATT: e.attErrorCode)
      call.replyError(d.name, d.message)
    case .success(let level):
      call.reply()
      onEvent?(.alert(level, from: address))
    }
  }

  private func legacyWrite(
    _ call: DBusCall, _ value: [UInt8], offset: Int, from address: BDAddress
  ) {
    let decoded = value.withUnsafeBytes { LegacyRemoteVolume.decode($0, offset: offset) }
    switch decoded {
    case .failure(let e): reject(call, e, from: address)
    case .success(.name):
      call.reply()
      notify(Self.legacyNotifyPath, LegacyRemoteVolume.encodeName(name))
    case .success(let request):
      call.reply()
      onEvent?(.legacy(request, from: address))
    }
  }
}

private func hexByte(_ b: UInt8) -> String {
  let s = String(b, radix: 16)
  return s.count == 1 ? "0" + s : s
}
