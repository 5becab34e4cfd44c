/// What happens to one tag: the shell's results (connect, notify, writes,
/// reads), the tag's notifications, the laptop's ring, and time.
public enum TagInput: Equatable, Sendable {
  /// Begin keeping the tag connected.
  case start
  /// `.connect` done: the tag is connected and its services resolved.
  case connected(TagFeatures)
  /// While connected, bluetoothd exported services it had not resolved
  /// before (a Service Changed from the tag): what the tag has now.
  case servicesChanged(TagFeatures)
  /// `.connect` failed (not in reach, bluetoothd refused, timed out).
  case connectFailed(String)
  /// The link went down.
  case disconnected(String)
  /// A notification on the button characteristic.
  case notification([UInt8])
  /// `.startNotify` failed.
  case notifyFailed(String)
  /// `.writeAlertLevel` done; `error` nil on success.
  case written(TagAlertTarget, AlertLevel, error: String?)
  /// `.readBattery` done.
  case battery(Result<[UInt8], TagFailure>)
  /// The timer armed by `.timer(.arm)` went off (early firings are ignored).
  case timerFired
  /// The laptop rings (starting or ringing) with this tag among its requesters.
  case ringing(Bool)
}

/// A failure text that can sit in a `Result`.
public struct TagFailure: Error, Equatable, Sendable, CustomStringConvertible {
  public let description: String
  public init(_ d: String) { description = d }
}

/// A tag machine's one timer.
public enum TagTimer: Hashable, Sendable {
  /// Connect again after a failure or a loss (`retryAt`).
  case reconnect
}

/// What the shell must do, in order.
public enum TagAction: Equatable, Sendable {
  /// Connect and resolve services; answer `.connected` or `.connectFailed`.
  case connect
  /// Subscribe to the button; answer `.notifyFailed` only if it fails.
  case startNotify
  /// Write the level; answer `.written`.
  case writeAlertLevel(TagAlertTarget, AlertLevel)
  /// Read Battery Level; answer `.battery`.
  case readBattery
  /// A request to the agent from `tag:NAME` (find start, stop, found).
  case request(DeviceRequest)
  /// Publish (status streams, MQTT) and run hooks.
  case event(TagEvent)
  /// The reconnect timer (`TimerAction`); answer a firing with `.timerFired`.
  case timer(TimerAction<TagTimer>)
  case log(String)
}

/// A tag event, for subscribers, MQTT and hooks.
public struct TagEvent: Equatable, Sendable {
  public enum Kind: String, Sendable, CaseIterable {
    /// The link dropped (after having been up).
    case lost = "tag_lost"
    /// Connected again after a loss.
    case back = "tag_back"
    /// Connected for the first time since the agent started.
    case connected = "tag_connected"
    /// The button was pressed; `detail` says what it did.
    case button = "tag_button"
    /// A notification that is not a press (wrong length): ignored.
    case badNotification = "tag_bad_notification"
    /// The tag refused a write (or subscribing, or a read).
    case refused = "tag_refused"
    /// A service the tag was expected to have is missing.
    case missing = "tag_missing"
    case battery = "tag_battery"
  }
  public var tag: String
  public var kind: Kind
  public var detail: String

  public init(tag: String, kind: Kind, detail: String) {
    self.tag = tag
    self.kind = kind
    self.detail = detail
  }
}

/// Retry delays: doubling from `initial`, never above `ceiling`.
public struct TagBackoff: Equatable, Sendable {
  public var initial: Double
  public var ceiling: Double
  /// Failed attempts since the last success.
  public private(set) var failures = 0

  public init(initial: Double = 1, ceiling: Double = 60) {
    self.initial = initial
    self.ceiling = ceiling
  }

  /// The delay before the next attempt, counting one more failure.
  public mutating func next() -> Double {
    let exponent = min(failures, 30)
    failures += 1
    return min(ceiling, initial * Double(1 << exponent))
  }

  public mutating func reset() { failures = 0 }
}

/// One tag as a pure state machine: events and the time in, actions out.
///
/// Connecting → connected → (link lost) → waiting (backoff) → connecting…
/// A failed connect waits longer each time (`TagBackoff`); a connect that
/// succeeds starts over from the shortest wait. The button rings the laptop
/// as `tag:NAME`; a press while it rings for the tag is found, stop or
/// ignored (`second_press`). Nothing the tag sends or refuses can leave a
/// ring running: presses only ever ask, and malformed input is reported
/// and dropped.
public struct TagMachine: Sendable {
  public enum Phase: String, Sendable {
    case idle, connecting, connected, waiting
  }

  public let config: TagConfig
  public private(set) var phase = Phase.idle
  public private(set) var backoff: TagBackoff
  public private(set) var features: TagFeatures?
  /// Percent, when the tag has a battery service and it was read.
  public private(set) var battery: Int?
  /// The level last written to its Immediate Alert while connected.
  public private(set) var alertLevel: AlertLevel?
  public private(set) var retryAt: MonotonicTime?
  public private(set) var lastError: String?
  /// The laptop rings for this tag.
  public private(set) var laptopRinging = false
  /// The tag has been connected once; its next connect is a `tag_back`.
  private var wasConnected = false
  private var lostSince: MonotonicTime?
  /// `on_lost = alert` rang the laptop; the tag's return withdraws it.
  private var lostAlertActive = false

  public init(config: TagConfig, backoff: TagBackoff = TagBackoff()) {
    self.config = config
    self.backoff = backoff
  }

  public var name: String { config.name }
  public var device: DeviceID { config.device }

  public mutating func handle(_ input: TagInput, now: MonotonicTime) -> [TagAction] {
    var out: [TagAction] = []
    switch input {
    case .start:
      guard phase == .idle else { break }
      phase = .connecting
      out.append(.connect)
    case .connected(let f):
      guard phase == .connecting else { break }
      connected(f, now: now, &out)
    case .servicesChanged(let f):
      guard phase == .connected, let old = features, f != old else { break }
      features = f
      out.append(.log("tag \(name): its services changed"))
      if f.button && !old.button { out.append(.startNotify) }
      if let level = config.linkLossAlert, f.linkLoss && !old.linkLoss {
        out.append(.writeAlertLevel(.linkLoss, level))
      }
      if f.battery && !old.battery { out.append(.readBattery) }
    case .connectFailed(let why):
      guard phase == .connecting else { break }
      lastError = why
      retry(now: now, why: "cannot connect: \(why)", &out)
    case .disconnected(let why):
      switch phase {
      case .connected: lost(why, now: now, &out)
      case .connecting:
        lastError = why
        retry(now: now, why: "the link dropped while connecting: \(why)", &out)
      case .idle, .waiting: break
      }
    case .notification(let bytes):
      guard phase == .connected else { break }
      press(bytes, &out)
    case .notifyFailed(let why):
      guard phase == .connected else { break }
      out.append(
        .log("tag \(name): cannot subscribe to the button: \(why); its presses go unheard"))
      out.append(.event(event(.refused, "button notifications: \(why)")))
    case .written(let target, let level, let error):
      if let error {
        out.append(
          .log(
            "tag \(name): the \(target.title) write of alert level \(level.rawValue) failed: \(error)"
          ))
        out.append(
          .event(event(.refused, "\(target.rawValue) alert level \(level.rawValue): \(error)")))
      } else if target == .immediateAlert, phase == .connected {
        alertLevel = level
      }
    case .battery(let result):
      guard phase == .connected else { break }
      switch result {
      case .success(let bytes) where bytes.count == 1 && bytes[0] <= 100:
        battery = Int(bytes[0])
        out.append(.event(event(.battery, "\(bytes[0])")))
      case .success(let bytes):
        out.append(
          .log("tag \(name): battery level \(tagHex(bytes)) is not one byte of 0-100; ignored"))
        out.append(.event(event(.badNotification, "battery level \(tagHex(bytes))")))
      case .failure(let why):
        out.append(.log("tag \(name): cannot read the battery level: \(why)"))
        out.append(.event(event(.refused, "battery level: \(why)")))
      }
    case .timerFired:
      guard phase == .waiting, let at = retryAt, now >= at else { break }
      retryAt = nil
      phase = .connecting
      out.append(.connect)
    case .ringing(let on):
      laptopRinging = on
      if !on { lostAlertActive = false }
    }
    return out
  }

  /// Rings the tag (or silences it, `.none`): the action to carry out, or
  /// why it cannot be done now.
  public func ring(_ level: AlertLevel) -> Result<TagAction, RequestError> {
    guard phase == .connected, let features else {
      let state = phase == .waiting ? "out of reach" : phase.rawValue
      return .failure(
        RequestError(
          .unavailable,
          "tag \(name) is not connected (\(state)\(lastError.map { ": \($0)" } ?? ""))"))
    }
    guard features.immediateAlert else {
      return .failure(
        RequestError(.unavailable, "tag \(name) has no Immediate Alert service (0x1802) to ring"))
    }
    return .success(.writeAlertLevel(.immediateAlert, level))
  }

  // MARK: Steps

  private mutating func connected(_ f: TagFeatures, now: MonotonicTime, _ out: inout [TagAction]) {
    phase = .connected
    features = f
    backoff.reset()
    lastError = nil
    retryAt = nil
    alertLevel = nil
    let back = wasConnected
    wasConnected = true
    if back {
      let away = lostSince.map { tagSeconds($0.seconds(until: now)) } ?? "?"
      out.append(.log("tag \(name): back after \(away) s"))
      out.append(.event(event(.back, "away \(away) s")))
      if lostAlertActive, laptopRinging { out.append(.request(.findStop)) }
      lostAlertActive = false
    } else {
      out.append(.log("tag \(name): connected"))
      out.append(.event(event(.connected, config.address?.description ?? "")))
    }
    lostSince = nil
    if f.button {
      out.append(.startNotify)
    } else {
      out.append(.log("tag \(name): no button characteristic (0xFFE1 in service 0xFFE0)"))
      out.append(.event(event(.missing, "button 0xFFE1")))
    }
    if let level = config.linkLossAlert {
      if f.linkLoss {
        out.append(.writeAlertLevel(.linkLoss, level))
      } else {
        out.append(
          .log("tag \(name): link_loss_alert is set, but it has no Link Loss service (0x1803)"))
        out.append(.event(event(.missing, "link loss 0x1803")))
      }
    }
    if f.battery { out.append(.readBattery) }
  }

  private mutating func lost(_ why: String, now: MonotonicTime, _ out: inout [TagAction]) {
    lostSince = now
    alertLevel = nil
    out.append(.log("tag \(name): lost (\(why))"))
    out.append(.event(event(.lost, why)))
    if config.onLost == .alert, !laptopRinging {
      lostAlertActive = true
      out.append(.request(.findStart))
    }
    // A tag that just walked away gets the shortest wait first.
    backoff.reset()
    retry(now: now, why: nil, &out)
  }

  private mutating func retry(now: MonotonicTime, why: String?, _ out: inout [TagAction]) {
    phase = .waiting
    let delay = backoff.next()
    let at = now.adding(seconds: delay)
    retryAt = at
    if let why {
      // Only the first failures and then every tenth: a tag away for a
      // day must not fill the log.
      let n = backoff.failures
      if n <= 3 || n % 10 == 0 {
        out.append(.log("tag \(name): \(why); retrying in \(tagSeconds(delay)) s (attempt \(n))"))
      }
    }
    out.append(.timer(.arm(.reconnect, at: at)))
  }

  private mutating func press(_ bytes: [UInt8], _ out: inout [TagAction]) {
    guard bytes.count == TagGATT.pressLength else {
      out.append(
        .log(
          "tag \(name): ignored a button notification of \(bytes.count) bytes (\(tagHex(bytes))); a press is 1 byte"
        ))
      out.append(.event(event(.badNotification, tagHex(bytes))))
      return
    }
    guard laptopRinging else {
      out.append(.event(event(.button, "ring")))
      out.append(.request(.findStart))
      return
    }
    out.append(.event(event(.button, config.secondPress.rawValue)))
    switch config.secondPress {
    case .found: out.append(.request(.found))
    case .stop: out.append(.request(.findStop))
    case .ignore:
      out.append(.log("tag \(name): a press while ringing is ignored (second_press = ignore)"))
    }
  }

  private func event(_ kind: TagEvent.Kind, _ detail: String) -> TagEvent {
    TagEvent(tag: name, kind: kind, detail: detail)
  }
}

/// Bounded hex for logs (a tag may send anything).
func tagHex(_ bytes: [UInt8]) -> String {
  let digits = Array("0123456789abcdef")
  var s = ""
  for b in bytes.prefix(32) {
    s.append(digits[Int(b >> 4)])
    s.append(digits[Int(b & 15)])
  }
  return bytes.count > 32 ? s + "…" : s
}

/// One decimal (2.5, 60).
func tagSeconds(_ d: Double) -> String {
  let r = (d * 10).rounded() / 10
  return r == r.rounded() ? String(Int64(r)) : String(r)
}

extension TagMachine {
  /// Who the tag's requests come from: the device `tag:NAME`.
  public var requester: Requester { Requester(device: device, name: "tag \(name)") }
}
