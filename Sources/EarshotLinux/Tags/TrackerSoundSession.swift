import EarshotCore

/// One ring, silence or identify of a stranger's tracker: its
/// `TrackerSoundMachine` and what the shell knows of the tag on the bus.
final class TrackerSoundSession {
  var machine: TrackerSoundMachine
  let address: BDAddress
  /// How answers and logs name it ("tracker 3 (Find My (separated) at …)").
  let what: String
  let reply: (TrackerSoundOutcome) -> Void
  /// The device object in use; nil once its link was let go.
  var devicePath: String?
  /// (service UUID/characteristic UUID) → object path.
  var characteristics: [String: String] = [:]
  var writeTypes: [String: String] = [:]
  /// The characteristic whose notifications are the machine's answers.
  var listening: String?
  /// Adapters discovering for it.
  var discovering: [String] = []
  var timer: EventLoop.TimerID?
  /// Bumped at each connect: answers to older calls are dropped.
  var generation = 0
  /// Disconnects bluetoothd has not answered yet, and what waits for them:
  /// a connect or an answer before the old link is down would find it
  /// still up (Connect says AlreadyConnected, then StartNotify NotConnected).
  var disconnecting = 0
  var afterDisconnect: [() -> Void] = []

  init(
    _ machine: TrackerSoundMachine, address: BDAddress, what: String,
    reply: @escaping (TrackerSoundOutcome) -> Void
  ) {
    self.machine = machine
    self.address = address
    self.what = what
    self.reply = reply
  }
}

/// Ringing and identifying trackers through the tags' bluetoothd client
/// (`BlueZCentral`): the machine decides, this carries out (thin). A
/// tracker bluetoothd has not heard is scanned for on `trackerAdapter`
/// (the scanner's, `[scanner] adapter`; nil: the first adapter).
extension TagTransport {
  /// Starts one; false when a request for this tracker is under way.
  public func soundTracker(
    _ address: BDAddress, family: TrackerProtocol.Family, mode: TrackerSoundMode, what: String,
    reply: @escaping (TrackerSoundOutcome) -> Void
  ) -> Bool {
    guard soundSessions[address] == nil else { return false }
    let s = TrackerSoundSession(
      TrackerSoundMachine(family: family, mode: mode), address: address, what: what, reply: reply)
    soundSessions[address] = s
    agent.log("trackers: \(mode.rawValue) \(what)")
    feed(s, .start)
    return true
  }

  /// The agent stops: every session ends disconnected.
  func stopSounds() {
    for s in soundSessions.values {
      feed(s, .disconnected("the agent is stopping"))
      if soundSessions[s.address] != nil {
        // Still waiting for a retry: let it go.
        finishSound(s, .failed(attempts: s.machine.attempts, "the agent stopped"))
      }
    }
  }

  func soundDisconnected(_ path: String) {
    for s in soundSessions.values {
      guard let device = s.devicePath, device == path || device.hasPrefix(path + "/") else {
        continue
      }
      feed(s, .disconnected(path == "/org/bluez" ? "bluetoothd left the bus" : "the link dropped"))
    }
  }

  func soundValue(_ path: String, _ value: [UInt8]) {
    for s in soundSessions.values where s.listening == path { feed(s, .value(value)) }
  }

  private func feed(_ s: TrackerSoundSession, _ input: TrackerSoundInput) {
    for action in s.machine.handle(input, now: Clock.now()) {
      // A step answered at once may have finished it meanwhile.
      guard soundSessions[s.address] === s else { return }
      perform(action, s)
    }
  }

  private func perform(_ action: TrackerSoundAction, _ s: TrackerSoundSession) {
    let g = s.generation
    switch action {
    case .connect: whenDisconnected(s) { [weak self] in self?.connectSound(s) }
    case .subscribe(let row):
      guard let central, let path = s.characteristics[row.key] else {
        return feed(s, .subscribed(error: "its characteristic is gone"))
      }
      s.listening = path
      central.startNotify(path) { [weak self] result in
        guard let self, g == s.generation else { return }
        let error: String? = if case .failure(let e) = result { e.description } else { nil }
        self.feed(s, .subscribed(error: error))
      }
    case .write(let row, let bytes):
      guard let central, let path = s.characteristics[row.key] else {
        return feed(s, .written(error: "its characteristic is gone"))
      }
      s.listening = path
      central.write(path, bytes, type: s.writeTypes[path]) { [weak self] result in
        guard let self, g == s.generation else { return }
        let error: String? = if case .failure(let e) = result { e.description } else { nil }
        self.feed(s, .written(error: error))
      }
    case .disconnect:
      stopDiscovering(s)
      if let device = s.devicePath, let central {
        s.disconnecting += 1
        central.disconnect(device) {
          s.disconnecting -= 1
          guard s.disconnecting == 0 else { return }
          let waiting = s.afterDisconnect
          s.afterDisconnect = []
          for next in waiting { next() }
        }
      }
      s.devicePath = nil
      s.listening = nil
      s.generation += 1
    case .armTimer(let at):
      if let t = s.timer { loop.cancel(t) }
      s.timer = loop.at(at) { [weak self] in
        guard let self else { return }
        s.timer = nil
        self.feed(s, .timerFired)
      }
    case .log(let line):
      agent.log("trackers: \(s.what): \(line)")
    case .finish(let outcome):
      whenDisconnected(s) { [weak self] in self?.finishSound(s, outcome) }
    }
  }

  /// Runs `next` once bluetoothd has answered every disconnect asked.
  private func whenDisconnected(_ s: TrackerSoundSession, _ next: @escaping () -> Void) {
    if s.disconnecting == 0 { next() } else { s.afterDisconnect.append(next) }
  }

  private func finishSound(_ s: TrackerSoundSession, _ outcome: TrackerSoundOutcome) {
    guard soundSessions.removeValue(forKey: s.address) != nil else { return }
    if let t = s.timer { loop.cancel(t) }
    s.timer = nil
    stopDiscovering(s)
    agent.log("trackers: " + outcome.line(s.what))
    s.reply(outcome)
  }

  private func stopDiscovering(_ s: TrackerSoundSession) {
    for a in s.discovering { central?.stopDiscovery(adapter: a) }
    s.discovering = []
  }

  /// Finds the tag on any adapter (discovering on `trackerAdapter` when
  /// bluetoothd has not heard it), connects and lists its characteristics.
  private func connectSound(_ s: TrackerSoundSession) {
    s.generation += 1
    let g = s.generation
    guard let central = bus() else {
      return feed(s, .connectFailed("the system D-Bus is not reachable", seen: true))
    }
    func fail(_ why: String, seen: Bool) {
      guard g == s.generation else { return }
      feed(s, .connectFailed(why, seen: seen))
    }
    central.objects { [weak self] result in
      guard let self, g == s.generation else { return }
      let objects: BlueZCentral.Objects
      switch result {
      // bluetoothd itself did not answer: no news of the tag.
      case .failure(let e): return fail(e.description, seen: true)
      case .success(let o): objects = o
      }
      guard let device = BlueZCentral.devices(objects, address: s.address).first else {
        // The adapter that heard it: the scanner's.
        switch BlueZCentral.adapter(objects, named: self.trackerAdapter) {
        case .failure(let e): return fail(e.description, seen: true)
        case .success(let a):
          if !s.discovering.contains(a) {
            central.discover(adapter: a)
            s.discovering.append(a)
          }
          let name = a.split(separator: "/").last.map(String.init) ?? a
          return fail("bluetoothd has not heard it (scanning for it on \(name))", seen: false)
        }
      }
      self.stopDiscovering(s)
      s.devicePath = device
      central.connect(device, timeout: 15) { [weak self] result in
        guard let self, g == s.generation else { return }
        if case .failure(let e) = result { return fail(e.description, seen: true) }
        central.objects { [weak self] result in
          guard let self, g == s.generation else { return }
          guard case .success(let objects) = result else {
            return fail("cannot list its services", seen: true)
          }
          s.characteristics = BlueZCentral.characteristics(objects, device: device)
          s.writeTypes = BlueZCentral.writeTypes(objects, device: device)
          self.feed(s, .connected(Set(s.characteristics.keys)))
        }
      }
    }
  }
}
