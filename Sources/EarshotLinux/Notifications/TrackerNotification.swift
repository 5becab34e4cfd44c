import EarshotCore

/// A desktop notification for each tracker that follows, as a transport on
/// the user's session bus (org.freedesktop.Notifications). Its actions:
/// **Ring it** where the protocol lets a stranger ring the tag (through
/// BlueZ, `tracker.ring`; the answer replaces the body), **Ignore**
/// trusts it for a day (`tracker.trust`), **Details** shows it again with
/// what `earshot trackers` lists for it.
///
/// Without a session bus or a notification server nothing else changes:
/// one log line; the control socket's event, the hook and the log remain.
public final class TrackerNotification: AgentTransport {
  public let name = "tracker-notification"
  public var deviceLink: DeviceLink? { nil }
  private unowned let agent: Daemon
  private let address: String?
  private var bus: DBusConnection?
  /// The watch's latest time, for the details' "seconds ago".
  private let now: () -> MonotonicTime
  /// The trackers on screen, by the server's notification id.
  private var shown: [UInt32: TrackerRow] = [:]
  /// A failure was logged; the next one is not (until a success).
  private var warned = false
  /// Notify calls waiting for their answer.
  public private(set) var waiting = 0
  /// Notify calls the server has answered (shown or replaced).
  public private(set) var answered = 0

  static let service = FindPhoneNotification.service
  static let path = FindPhoneNotification.path

  /// `address` nil: the user's session bus.
  public init(agent: Daemon, address: String? = nil, now: @escaping () -> MonotonicTime) {
    self.agent = agent
    self.address = address
    self.now = now
  }

  public func start() {
    guard bus == nil else { return }
    do {
      bus = try DBusConnection.notificationServer(
        loop: agent.loop, address: address,
        invoked: { [unowned self] key, id in self.invoked(key, id: id) },
        closed: { [unowned self] id in self.shown[id] = nil })
    } catch {
      agent.log("tracker notification: no desktop notifications for trackers: \(error)")
    }
  }

  public func stop() {
    bus?.close()
    bus = nil
    shown = [:]
  }

  public func agentEvent(_ event: AgentEvent) {
    if case .trackerFollowing(let row) = event {
      let text = TrackerAlert.text(for: row)
      notify(row, summary: text.summary, body: text.body, replacing: 0)
    }
  }

  private func notify(_ row: TrackerRow, summary: String, body: String, replacing: UInt32) {
    guard let bus else { return }
    var actions: [DBusValue] = []
    for a in TrackerAlert.actions(for: row) { actions += [.string(a.key), .string(a.label)] }
    waiting += 1
    bus.call(
      destination: Self.service, path: Self.path, interface: Self.service, member: "Notify",
      [
        .string("Earshot"), .uint32(replacing), .string("dialog-warning"), .string(summary),
        .string(body), .array(element: "s", actions),
        .properties([("urgency", .byte(2)), ("category", .string("device"))]),
        // Stays until the user acts on it: 0 = never expires.
        .int32(0),
      ]
    ) { [weak self] result in
      guard let self else { return }
      self.waiting -= 1
      self.answered += 1
      switch result {
      case .success(let values):
        guard let first = values.first, case .uint32(let id) = first else { break }
        self.warned = false
        self.shown[id] = row
      case .failure(let error):
        if !self.warned {
          self.warned = true
          self.agent.log(
            "tracker notification: cannot show it (is a notification server running?): \(error)")
        }
      }
    }
  }

  private func invoked(_ key: String, id: UInt32) {
    guard let row = shown[id] else { return }
    let summary = TrackerAlert.text(for: row).summary
    switch key {
    case "ignore":
      agent.perform(
        .trackerTrust(row.number, for: TrackerAlert.ignoreFor),
        from: Requester(device: nil, name: "notification")
      ) { [unowned agent] outcome in
        if case .refused(let e) = outcome {
          agent.log("tracker notification: ignore: \(e.message)")
        }
      }
      shown[id] = nil
      // Some servers keep a notification whose action was taken: close it.
      bus?.call(
        destination: Self.service, path: Self.path, interface: Self.service,
        member: "CloseNotification", [.uint32(id)]
      ) { _ in }
    case "details":
      // The row as the watch keeps it now (a trust or new sightings since).
      let current = agent.trackers?.caughtUp().rows.first { $0.number == row.number } ?? row
      notify(
        current, summary: summary, body: TrackerAlert.details(current, now: now()), replacing: id)
    case "ring":
      // The answer (rang, near its owner, out of range…) replaces the body
      // when it comes (seconds: a connect); the actions stay, so it can be
      // rung again.
      agent.perform(
        .trackerSound(row.number, .ring), from: Requester(device: nil, name: "notification")
      ) { [weak self] outcome in
        guard let self else { return }
        let line: String
        switch outcome {
        case .trackerSound(_, _, let l): line = l
        case .refused(let e): line = e.message
        default: return
        }
        self.notify(row, summary: summary, body: line, replacing: id)
      }
    default:
      break
    }
  }
}
