import EarshotCore

/// A desktop notification while find-phone rings, as a transport: the
/// user's session bus (org.freedesktop.Notifications) is its wire. It shows
/// who asks ("Keys is looking for this laptop") with two actions: **Found
/// it** is the `found` request (as `earshot found`), **Stop** withdraws
/// every open request, each as its own device (the ring stops with no
/// phone-found notice). The notification is replaced when the requesters
/// change and closed when the ring ends any other way.
///
/// Without a session bus or a notification server nothing else changes:
/// one log line, and find-phone rings as before.
public final class FindPhoneNotification: AgentTransport {
  public let name = "notification"
  public var deviceLink: DeviceLink? { nil }
  private unowned let agent: Daemon
  private let address: String?
  private var bus: DBusConnection?

  static let service = "org.freedesktop.Notifications"
  static let path = "/org/freedesktop/Notifications"
  static let foundAction = "found"
  static let stopAction = "stop"

  /// The server's id of our notification (0: none on screen).
  private var shownID: UInt32 = 0
  /// The requesters the notification shows (or the user dismissed it for).
  private var shownFor: [DeviceID] = []
  /// The requesters it should show; empty when nothing rings.
  private var wanted: [DeviceID] = []
  /// A Notify call is waiting for its answer (it holds the id).
  private var inFlight = false
  /// A failure was logged; the next one is not (until a success).
  private var warned = false
  /// Stop is withdrawing the requesters one by one: show none meanwhile.
  private var withdrawing = false

  /// A call to the notification server is waiting for its answer.
  public var waitingForTheServer: Bool { inFlight }

  /// `address` nil: the user's session bus.
  public init(agent: Daemon, address: String? = nil) {
    self.agent = agent
    self.address = address
  }

  public func start() {
    do {
      bus = try DBusConnection.notificationServer(
        loop: agent.loop, address: address,
        invoked: { [unowned self] key, id in self.invoked(key, id: id) },
        closed: { [unowned self] id in self.closed(id) })
    } catch {
      agent.log("notification: no desktop notifications while find-phone rings: \(error)")
      return
    }
    update(agent.find.status)
  }

  public func stop() {
    wanted = []
    sync()
    bus?.close()
    bus = nil
  }

  public func agentEvent(_ event: AgentEvent) {
    if case .find(let status) = event { update(status) }
  }

  private func update(_ status: FindStatus) {
    // While stopping, the requesters are queued for the next ring.
    let ringing = status.state == .starting || status.state == .ringing
    wanted = ringing && !withdrawing ? status.requesters : []
    sync()
  }

  /// Brings the screen to `wanted`: one Notify or CloseNotification at a time.
  private func sync() {
    guard let bus, !inFlight else { return }
    if wanted.isEmpty {
      shownFor = []
      guard shownID != 0 else { return }
      let id = shownID
      shownID = 0
      bus.call(
        destination: Self.service, path: Self.path, interface: Self.service,
        member: "CloseNotification", [.uint32(id)]
      ) { _ in }
      return
    }
    // Unchanged, or dismissed by the user for these very requesters.
    guard wanted != shownFor else { return }
    let showing = wanted
    let text = Self.text(for: showing)
    inFlight = true
    bus.call(
      destination: Self.service, path: Self.path, interface: Self.service, member: "Notify",
      [
        .string("Earshot"), .uint32(shownID), .string("find-location"), .string(text.summary),
        .string(text.body),
        .array(
          element: "s",
          [
            .string(Self.foundAction), .string("Found it"), .string(Self.stopAction),
            .string("Stop"),
          ]),
        .properties([("urgency", .byte(2)), ("category", .string("device"))]),
        .int32(0),
      ]
    ) { [weak self] result in
      guard let self else { return }
      self.inFlight = false
      switch result {
      case .success(let values):
        guard let first = values.first, case .uint32(let id) = first else { break }
        self.warned = false
        self.shownID = id
        self.shownFor = showing
      case .failure(let error):
        if !self.warned {
          self.warned = true
          self.agent.log(
            "notification: cannot show the find-phone notification (is a notification server running?): \(error)"
          )
        }
        // Not again for these requesters; a change tries again.
        self.shownFor = showing
      }
      self.sync()
    }
  }

  private func invoked(_ key: String, id: UInt32) {
    guard id != 0, id == shownID else { return }
    switch key {
    case Self.foundAction:
      agent.perform(.found, from: Requester(device: nil, name: "notification")) {
        [unowned agent] outcome in
        if case .refused(let e) = outcome { agent.log("notification: found: \(e.message)") }
      }
    case Self.stopAction:
      // One withdrawal at a time would briefly show the others again.
      withdrawing = true
      defer {
        withdrawing = false
        update(agent.find.status)
      }
      for device in agent.find.status.requesters {
        agent.perform(
          .findStop, from: Requester(device: device, name: "notification for \(device)")
        ) { [unowned agent] outcome in
          if case .refused(let e) = outcome { agent.log("notification: stop: \(e.message)") }
        }
      }
    default:
      break
    }
  }

  private func closed(_ id: UInt32) {
    guard id != 0, id == shownID else { return }
    // Dismissed (or acted on): the ring goes on; a change of requesters shows it again.
    shownID = 0
  }

  /// The summary and body shown for these requesters.
  public static func text(for requesters: [DeviceID]) -> (summary: String, body: String) {
    var names: [String] = []
    for r in requesters where !names.contains(r.name) { names.append(r.name) }
    let who: String
    switch names.count {
    case 0: who = "A device"
    case 1: who = names[0]
    default: who = names.dropLast().joined(separator: ", ") + " and " + names.last!
    }
    let summary = "\(who) \(names.count > 1 ? "are" : "is") looking for this laptop"
    let body =
      "Found it stops the ring and tells \(names.count > 1 ? "them" : "it"); Stop silences it without telling."
    return (summary, body)
  }
}

extension DBusConnection {
  /// A connection to the desktop's notification server (`address` nil: the
  /// user's session bus) that hears its two signals: the action the user
  /// picked on a notification (`invoked(key, id)`) and a notification
  /// closed (`closed(id)`). Malformed signals are ignored.
  static func notificationServer(
    loop: EventLoop, address: String?, invoked: @escaping (String, UInt32) -> Void,
    closed: @escaping (UInt32) -> Void
  ) throws -> DBusConnection {
    let bus = try DBusConnection(loop: loop, address: address, session: address == nil)
    let service = FindPhoneNotification.service
    let signals =
      "type='signal',sender='\(service)',path='\(FindPhoneNotification.path)',interface='\(service)'"
    try bus.match(signals + ",member='ActionInvoked'") { _, _, args in
      guard args.count == 2, case .uint32(let id) = args[0], case .string(let key) = args[1]
      else { return }
      invoked(key, id)
    }
    try bus.match(signals + ",member='NotificationClosed'") { _, _, args in
      guard let first = args.first, case .uint32(let id) = first else { return }
      closed(id)
    }
    return bus
  }
}
