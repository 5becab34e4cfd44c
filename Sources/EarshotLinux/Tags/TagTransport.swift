import EarshotCore

/// Key-finder tags and ringing devices from the laptop: keeps each
/// `[tag "NAME"]` connected through bluetoothd (one `TagMachine` each,
/// carried out by `BlueZCentral`), turns button presses into find-phone
/// requests from `tag:NAME`, serves `ring` requests (a tag by name, or any
/// bonded device with an Immediate Alert service by address), and sends
/// tag events to every transport and to the tags' hooks.
public final class TagTransport: AgentTransport {
  public let name = "tags"
  public let link = TagDeviceLink()
  public var deviceLink: DeviceLink? { link }

  unowned let agent: Daemon
  let loop: EventLoop
  private let busAddress: String?
  var central: BlueZCentral?
  private var slots: [TagSlot]
  private var hooks: HookRunner
  private var hookTimer: EventLoop.TimerID?
  private var started = false
  /// Trackers being rung or identified (`TrackerSoundSession`), by address.
  var soundSessions: [BDAddress: TrackerSoundSession] = [:]
  /// Where a tracker bluetoothd has not heard is scanned for (the
  /// scanner's adapter; nil: the first).
  public var trackerAdapter: String?
  /// A tag's link as presence changed: true connected, false out of reach
  /// (lost, or a connect attempt failed). Regions naming it follow.
  public var onPresence: ((String, Bool) -> Void)?

  public init(tags: [TagConfig], agent: Daemon, busAddress: String? = nil) {
    self.agent = agent
    loop = agent.loop
    self.busAddress = busAddress
    slots = tags.map { TagSlot(TagMachine(config: $0), loop: agent.loop) }
    hooks = HookRunner(log: { [unowned agent] in agent.log($0) })
    link.onNotice = { [unowned agent] id, device in
      // A tag has no way to hear the phone-found notice: its own press
      // was the answer, so the link takes it.
      agent.log("tags: \(device) has no phone-found notice; taken as accepted")
      agent.perform(.noticeResult(id, .accepted), from: Requester(device: device)) { _ in }
    }
    for slot in slots {
      slot.timers.onFire = { [weak self, weak slot] _ in
        guard let self, let slot else { return }
        self.feed(slot, .timerFired)
      }
    }
  }

  /// The tags' status: one object per tag.
  public var statusJSON: JSONValue {
    let now = Clock.now()
    return .array(slots.map { $0.json(now: now) })
  }

  /// Each tag's name, state and battery (for MQTT).
  public var snapshots: [(name: String, state: String, battery: Int?)] {
    slots.map { ($0.machine.name, $0.machine.phase.rawValue, $0.machine.battery) }
  }

  /// The tag whose MQTT topic slug this is.
  public func tagName(slug: String) -> String? {
    slots.first { MQTTTopics.slug($0.machine.name) == slug }?.machine.name
  }

  public func start() {
    started = true
    guard !slots.isEmpty else { return }
    guard bus() != nil else {
      agent.log("tags: cannot connect any tag until the system D-Bus is reachable")
      return
    }
    for s in slots { feed(s, .start) }
  }

  public func stop() {
    started = false
    for s in slots {
      s.timers.cancelAll()
      if let r = s.refresh { loop.cancel(r) }
      s.refresh = nil
      s.generation += 1
    }
    if let t = hookTimer { loop.cancel(t) }
    hookTimer = nil
    stopSounds()
    central?.bus.close()
    central = nil
  }

  /// The D-Bus side, opened at first need (an agent without tags opens
  /// it only for `ring`).
  func bus() -> BlueZCentral? {
    if let central { return central }
    do {
      let c = try BlueZCentral(loop: loop, busAddress: busAddress)
      c.onDisconnect = { [unowned self] path in
        self.disconnected(path)
        self.soundDisconnected(path)
      }
      c.onValue = { [unowned self] path, value in
        self.value(path, value)
        self.soundValue(path, value)
      }
      c.onAdded = { [unowned self] path in self.added(path) }
      c.onBlueZBack = { [unowned self] in
        // bluetoothd came back: tags waiting for their retry go at once.
        for s in self.slots where s.machine.phase == .waiting {
          self.agent.log("tags: bluetoothd is back; reconnecting \(s.machine.name)")
          self.feedTimerNow(s)
        }
      }
      central = c
      return c
    } catch {
      agent.log("tags: cannot reach the system D-Bus: \(error)")
      return nil
    }
  }

  // MARK: The machines

  private func feed(_ slot: TagSlot, _ input: TagInput) {
    let actions = slot.machine.handle(input, now: Clock.now())
    for a in actions { perform(a, slot) }
    // Connecting again is no news: presence changes on an answer.
    let phase = slot.machine.phase
    let present: Bool? = phase == .connected ? true : phase == .waiting ? false : nil
    if let present, present != slot.presence {
      slot.presence = present
      onPresence?(slot.machine.name, present)
    }
  }

  private func feedTimerNow(_ slot: TagSlot) {
    if let at = slot.machine.retryAt {
      // Move the deadline to now by firing at it.
      slot.timers.apply(.arm(.reconnect, at: min(at, Clock.now())))
    } else {
      slot.timers.apply(.cancel(.reconnect))
    }
  }

  private func perform(_ action: TagAction, _ slot: TagSlot) {
    switch action {
    case .connect: connect(slot)
    case .startNotify:
      guard let path = slot.path(TagGATT.buttonService, TagGATT.button) else { return }
      let g = slot.generation
      central?.startNotify(path) { [weak self, weak slot] result in
        guard let self, let slot, g == slot.generation, case .failure(let why) = result else {
          return
        }
        self.feed(slot, .notifyFailed(why.description))
      }
    case .writeAlertLevel(let target, let level):
      write(slot, target, level, reply: nil)
    case .readBattery:
      guard let path = slot.path(TagGATT.batteryService, TagGATT.batteryLevel) else { return }
      let g = slot.generation
      central?.read(path) { [weak self, weak slot] result in
        guard let self, let slot, g == slot.generation else { return }
        self.feed(slot, .battery(result))
      }
    case .request(let request):
      let tag = slot.machine.name
      agent.perform(request, from: slot.machine.requester) { [unowned agent] outcome in
        if case .refused(let e) = outcome { agent.log("tags: \(tag): \(e.message)") }
      }
    case .event(let e):
      agent.dispatch(.tag(e))
      runHook(e, slot)
    case .timer(let action): slot.timers.apply(action)
    case .log(let line):
      agent.log("tags: " + line)
    }
  }

  /// Finds the device, connects, resolves the services, reports features.
  private func connect(_ slot: TagSlot) {
    slot.generation += 1
    let g = slot.generation
    guard let central = bus() else {
      feed(slot, .connectFailed("the system D-Bus is not reachable"))
      return
    }
    let config = slot.machine.config
    guard let address = config.address else { return }
    func fail(_ why: String) {
      guard g == slot.generation else { return }
      feed(slot, .connectFailed(why))
    }
    central.objects { [weak self] result in
      guard let self, g == slot.generation else { return }
      let objects: BlueZCentral.Objects
      switch result {
      case .failure(let e): return fail(e.description)
      case .success(let o): objects = o
      }
      let adapter: String
      switch BlueZCentral.adapter(objects, named: config.adapter) {
      case .failure(let e): return fail(e.description)
      case .success(let a): adapter = a
      }
      let device = BlueZCentral.devicePath(adapter: adapter, address)
      guard objects[device] != nil else {
        central.discover(adapter: adapter)
        return fail("bluetoothd has not seen \(address) yet (scanning for it on \(adapter))")
      }
      central.stopDiscovery(adapter: adapter)
      slot.devicePath = device
      central.connect(device) { [weak self] result in
        guard let self, g == slot.generation else { return }
        if case .failure(let e) = result { return fail(e.description) }
        central.objects { [weak self] result in
          guard let self, g == slot.generation else { return }
          guard case .success(let objects) = result else { return fail("cannot list its services") }
          slot.characteristics = BlueZCentral.characteristics(objects, device: device)
          slot.writeTypes = BlueZCentral.writeTypes(objects, device: device)
          self.feed(slot, .connected(slot.features))
        }
      }
    }
  }

  private func disconnected(_ path: String) {
    for s in slots {
      guard let device = s.devicePath, device == path || device.hasPrefix(path + "/") else {
        continue
      }
      let why = path == "/org/bluez" ? "bluetoothd left the bus" : "the link dropped"
      if s.machine.phase == .connecting { s.generation += 1 }
      feed(s, .disconnected(why))
    }
  }

  /// Objects exported under a connected tag (services it resolved late):
  /// its characteristics are listed again, once things settle.
  private func added(_ path: String) {
    for s in slots where s.machine.phase == .connected && s.refresh == nil {
      guard let device = s.devicePath, path.hasPrefix(device + "/") else { continue }
      let g = s.generation
      s.refresh = loop.after(seconds: 0.5) { [weak self, weak s] in
        guard let self, let s else { return }
        s.refresh = nil
        self.central?.objects { [weak self, weak s] result in
          guard let self, let s, g == s.generation, case .success(let objects) = result else {
            return
          }
          s.characteristics = BlueZCentral.characteristics(objects, device: device)
          s.writeTypes = BlueZCentral.writeTypes(objects, device: device)
          self.feed(s, .servicesChanged(s.features))
        }
      }
    }
  }

  private func value(_ path: String, _ value: [UInt8]) {
    for s in slots where s.path(TagGATT.buttonService, TagGATT.button) == path {
      feed(s, .notification(value))
    }
  }

  /// Writes Alert Level; `reply` (a `ring` request) hears how it went.
  private func write(
    _ slot: TagSlot, _ target: TagAlertTarget, _ level: AlertLevel, reply: ReplyHandler?
  ) {
    guard let central else {
      reply?(.refused(RequestError(.unavailable, "the system D-Bus is not reachable")))
      return
    }
    guard let path = slot.path(target.serviceUUID, TagGATT.alertLevel) else {
      reply?(
        .refused(
          RequestError(.unavailable, "tag \(slot.machine.name) has no \(target.title) service")))
      return
    }
    let address = slot.machine.config.address
    central.write(path, level.encoded, type: slot.writeTypes[path]) {
      [weak self, weak slot] result in
      guard let self, let slot else { return }
      let error: String? = if case .failure(let e) = result { e.description } else { nil }
      self.feed(slot, .written(target, level, error: error))
      guard let reply else { return }
      if let error {
        reply(
          .refused(
            RequestError(
              .failed, "tag \(slot.machine.name) refused alert level \(level.rawValue): \(error)")))
      } else if let address {
        reply(.rang(target: slot.machine.name, device: address, level: level))
      }
    }
  }

  // MARK: Ring

  /// `earshot ring TARGET`: a tag by name (or its address), else any
  /// bonded device by address.
  public func ring(_ target: String, _ level: AlertLevel, reply: @escaping ReplyHandler) {
    let address = BDAddress(target)
    if let slot = slots.first(where: { $0.machine.name == target })
      ?? slots.first(where: { address != nil && $0.machine.config.address == address })
    {
      switch slot.machine.ring(level) {
      case .failure(let e): reply(.refused(e))
      case .success(.writeAlertLevel(let t, let l)): write(slot, t, l, reply: reply)
      case .success: reply(.refused(RequestError(.failed, "nothing to write")))
      }
      return
    }
    guard let address else {
      let names = slots.map(\.machine.name)
      reply(
        .refused(
          RequestError(
            .unavailable,
            "no tag named '\(target)' (tags: \(names.isEmpty ? "none configured" : names.joined(separator: ", "))), and it is not an address AA:BB:CC:DD:EE:FF"
          )))
      return
    }
    ringDevice(address, target: target, level, reply: reply)
  }

  /// Any bonded device with an Immediate Alert service (earbuds, watches).
  private func ringDevice(
    _ address: BDAddress, target: String, _ level: AlertLevel, reply: @escaping ReplyHandler
  ) {
    guard let central = bus() else {
      reply(.refused(RequestError(.unavailable, "the system D-Bus is not reachable")))
      return
    }
    func refuse(_ code: RequestError.Code, _ why: String) {
      agent.log("tags: ring \(address): \(why)")
      reply(.refused(RequestError(code, why)))
    }
    central.objects { result in
      guard case .success(let objects) = result else {
        return refuse(.unavailable, "cannot reach bluetoothd (is it running?)")
      }
      let paths = BlueZCentral.devices(objects, address: address)
      guard
        let device = paths.first(where: {
          objects[$0]?[BlueZCentral.device1]?["Bonded"]?.boolValue == true
            || objects[$0]?[BlueZCentral.device1]?["Paired"]?.boolValue == true
        })
      else {
        return refuse(
          .unavailable,
          paths.isEmpty
            ? "bluetoothd does not know \(address): pair it first (bluetoothctl pair \(address))"
            : "\(address) is not bonded with this laptop: pair it first (bluetoothctl pair \(address))"
        )
      }
      central.connect(device) { result in
        if case .failure(let e) = result { return refuse(.failed, "cannot connect: \(e)") }
        central.objects { result in
          guard case .success(let objects) = result else {
            return refuse(.failed, "cannot list its services")
          }
          let chars = BlueZCentral.characteristics(objects, device: device)
          guard
            let path = chars[BlueZCentral.key(TagGATT.immediateAlertService, TagGATT.alertLevel)]
          else {
            return refuse(.unavailable, "\(address) has no Immediate Alert service (0x1802)")
          }
          let type = BlueZCentral.writeTypes(objects, device: device)[path]
          central.write(path, level.encoded, type: type) { [weak self] result in
            if case .failure(let e) = result {
              return refuse(.failed, "\(address) refused alert level \(level.rawValue): \(e)")
            }
            self?.agent.log("tags: rang \(address) at alert level \(level.rawValue)")
            reply(.rang(target: target, device: address, level: level))
          }
        }
      }
    }
  }

  // MARK: Events

  public func agentEvent(_ event: AgentEvent) {
    guard case .find(let status) = event else { return }
    let active = [.starting, .ringing].contains(status.state)
    for s in slots {
      let ringing = active && status.requesters.contains(s.machine.device)
      if ringing != s.machine.laptopRinging { feed(s, .ringing(ringing)) }
    }
  }

  private func runHook(_ e: TagEvent, _ slot: TagSlot) {
    let config = slot.machine.config
    let argv: [String]?
    switch e.kind {
    case .lost: argv = config.hookLost
    case .back: argv = config.hookBack
    default: argv = nil
    }
    guard let argv else { return }
    hooks.spawn(
      argv,
      environment: [
        ("EARSHOT_TAG", config.name), ("EARSHOT_EVENT", e.kind.rawValue),
        ("EARSHOT_ADDRESS", config.address?.description ?? ""), ("EARSHOT_DETAIL", e.detail),
      ], timeout: config.hookTimeout, label: "tag \(config.name) \(e.kind.rawValue) hook")
    reapLater()
  }

  /// Collects finished hooks twice a second while any runs (SIGCHLD
  /// belongs to the region monitor's runner).
  private func reapLater() {
    guard hookTimer == nil, !hooks.running.isEmpty else { return }
    hookTimer = loop.after(seconds: 0.5) { [weak self] in
      guard let self else { return }
      self.hookTimer = nil
      self.hooks.reap()
      self.reapLater()
    }
  }
}

/// One tag: its machine and what the shell knows of it on the bus.
final class TagSlot {
  var machine: TagMachine
  var devicePath: String?
  /// (service UUID/characteristic UUID) → object path.
  var characteristics: [String: String] = [:]
  /// Object path → "request" or "command" (from its flags).
  var writeTypes: [String: String] = [:]
  /// The machine's reconnect timer.
  let timers: LoopTimers<TagTimer>
  /// What `onPresence` last said (nil: nothing yet).
  var presence: Bool?
  /// A pending re-listing of the characteristics (`TagTransport.added`).
  var refresh: EventLoop.TimerID?
  /// Bumped at each connect (and stop): answers to older calls are dropped.
  var generation = 0

  init(_ machine: TagMachine, loop: EventLoop) {
    self.machine = machine
    timers = LoopTimers(loop: loop)
  }

  /// What the characteristics found so far offer.
  var features: TagFeatures {
    let has = { (s: String, c: String) in self.path(s, c) != nil }
    return TagFeatures(
      button: has(TagGATT.buttonService, TagGATT.button),
      immediateAlert: has(TagGATT.immediateAlertService, TagGATT.alertLevel),
      linkLoss: has(TagGATT.linkLossService, TagGATT.alertLevel),
      battery: has(TagGATT.batteryService, TagGATT.batteryLevel))
  }

  func path(_ service: String, _ characteristic: String) -> String? {
    characteristics[BlueZCentral.key(service, characteristic)]
  }

  func json(now: MonotonicTime) -> JSONValue {
    let m = machine
    var fields: [(String, JSONValue)] = [
      ("name", .string(m.name)), ("address", .string(m.config.address?.description ?? "")),
      ("state", .string(m.phase.rawValue)),
      ("battery", m.battery.map { .int($0) } ?? .null),
      ("alert_level", m.alertLevel.map { .int(Int($0.rawValue)) } ?? .null),
    ]
    if let f = m.features {
      fields.append(
        (
          "services",
          .object([
            ("button", .bool(f.button)), ("immediate_alert", .bool(f.immediateAlert)),
            ("link_loss", .bool(f.linkLoss)), ("battery", .bool(f.battery)),
          ])
        ))
    }
    if let at = m.retryAt {
      fields.append(("retry_in_s", .number((now.seconds(until: at) * 10).rounded() / 10)))
    }
    fields.append(("failures", .int(m.backoff.failures)))
    fields.append(("last_error", m.lastError.map { .string($0) } ?? .null))
    return .object(fields)
  }
}

/// The device behind a tag's button (`tag:NAME`). A tag cannot hear the
/// phone-found notice: `onNotice` takes it.
public final class TagDeviceLink: DeviceLink {
  public let linkName = TagConfig.link
  var onNotice: ((NoticeID, DeviceID) -> Void)?

  public init() {}

  public func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool {
    guard let onNotice else { return false }
    onNotice(id, device)
    return true
  }
}

extension ControlProtocol {
  /// A tag event as a JSON line (socket subscribers, MQTT events).
  public static func tagEvent(_ e: TagEvent) -> String {
    event(e.kind.rawValue, [("tag", .string(e.tag)), ("detail", .string(e.detail))])
  }
}
