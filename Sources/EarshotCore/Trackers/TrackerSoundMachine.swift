/// What the user asked of a tracker.
public enum TrackerSoundMode: String, Sendable, CaseIterable {
  /// Play its sound.
  case ring
  /// Stop a sound it plays.
  case silence
  /// Ask it who it is (DULT's information opcodes and Get_Identifier).
  case identify
}

/// The shell's results and time, in.
public enum TrackerSoundInput: Equatable, Sendable {
  case start
  /// `.connect` done: the tag's characteristics as "service/characteristic" keys.
  case connected(Set<String>)
  /// `.connect` failed; `seen` false only when bluetoothd answered and has
  /// not heard the tag (all such: out of range), true for any other failure.
  case connectFailed(String, seen: Bool)
  /// `.subscribe` done; `error` nil on success.
  case subscribed(error: String?)
  /// `.write` done; `error` nil on success (the tag acknowledged it).
  case written(error: String?)
  /// A notification or indication on the characteristic in use.
  case value([UInt8])
  /// The link went down.
  case disconnected(String)
  /// The timer armed by `.armTimer` went off (early firings are ignored).
  case timerFired
}

/// What the shell must do, in order.
public enum TrackerSoundAction: Equatable, Sendable {
  /// Find the tag (scanning if bluetoothd has not seen it), connect, resolve
  /// its services; answer `.connected` or `.connectFailed`.
  case connect
  /// Turn on notifications or indications; answer `.subscribed`.
  case subscribe(TrackerSoundRow)
  /// Write (a write request where the characteristic allows one); answer `.written`.
  case write(TrackerSoundRow, [UInt8])
  /// Drop the link; no answer.
  case disconnect
  /// One timer: a new deadline replaces the old; answer `.timerFired`.
  case armTimer(MonotonicTime)
  case log(String)
  /// The one answer, always last.
  case finish(TrackerSoundOutcome)
}

/// One thing a tag said about itself.
public struct TrackerFact: Equatable, Sendable {
  public let name: String
  public let value: String
}

/// The answer to a ring, silence or identify: one per request.
public enum TrackerSoundOutcome: Equatable, Sendable {
  /// The tag took the start; `confirmed` false when it acknowledged the
  /// write but sent no DULT answer in time.
  case rang(via: String, confirmed: Bool)
  case silenced(via: String)
  case identified(via: String, [TrackerFact])
  /// The protocol lets only the owner ring it (Tile, SmartTag, Chipolo).
  case strangersCannot(String)
  /// Connected, but it offers none of the ways in for this mode.
  case noWayIn(String)
  /// It answered Invalid_state: it is with its owner.
  case nearOwner(via: String)
  /// It refused (a GATT error or a DULT status).
  case refused(via: String, String)
  /// bluetoothd never heard it in any attempt.
  case outOfRange(attempts: Int)
  case failed(attempts: Int, String)

  /// The tag did what was asked.
  public var succeeded: Bool {
    switch self {
    case .rang, .silenced, .identified: true
    default: false
    }
  }

  /// A stable name for the wire (`result`).
  public var code: String {
    switch self {
    case .rang: "rang"
    case .silenced: "silenced"
    case .identified: "identified"
    case .strangersCannot: "strangers_cannot_ring"
    case .noWayIn: "no_sound_service"
    case .nearOwner: "near_owner"
    case .refused: "refused"
    case .outOfRange: "out_of_range"
    case .failed: "failed"
    }
  }

  /// One line for a person; `what` names the tracker ("tracker 3 (AirTag at …)").
  public func line(_ what: String) -> String {
    switch self {
    case .rang(let via, true): "\(what) is ringing (\(via))"
    case .rang(let via, false):
      "\(what) took the ring (\(via)) but did not confirm it: listen for it"
    case .silenced(let via): "\(what) was told to stop ringing (\(via))"
    case .identified(let via, let facts):
      "\(what) (\(via)): "
        + (facts.isEmpty
          ? "it said nothing" : facts.map { "\($0.name) \($0.value)" }.joined(separator: ", "))
    case .strangersCannot(let name):
      "\(what) cannot be rung by a stranger: only its owner's \(name) app can ring it"
    case .noWayIn(let why): "\(what): \(why)"
    case .nearOwner(let via):
      "\(what) is near its owner (\(via) answered Invalid_state): it rings for strangers only when separated"
    case .refused(let via, let why): "\(what) refused (\(via)): \(why)"
    case .outOfRange(let n):
      "\(what) was not found: out of range (\(n) tr\(n == 1 ? "y" : "ies"))"
    case .failed(let n, let why): "\(what): failed after \(n) tr\(n == 1 ? "y" : "ies"): \(why)"
    }
  }
}

/// Ringing, silencing or identifying one tracker as a pure state machine:
/// the shell's results and the time in, actions out (as `TagMachine`).
///
/// Connect → (subscribe) → write → (DULT answer) → disconnect, trying the
/// protocol's ways in (`TrackerSound.candidates`) the tag offers, in order:
/// a refusal moves to the next, Invalid_state means near its owner.
///
/// Guarantees:
/// - exactly one `.finish`, always the last action; nothing after it;
/// - at most `settings.attempts` connects; a connect or link failure waits
///   `retryDelay` × attempt before the next (`searchDelay` × attempt when
///   bluetoothd has not heard the tag: it scans meanwhile), and every step has a deadline
///   (a step that hangs is a failed attempt, never a hung request);
/// - once a connect was asked for, `.disconnect` comes after it and before
///   `.finish`, on every path (bluetoothd is never left with a link it
///   did not expect), and before each new connect;
/// - Tile, SmartTag and Chipolo are answered without a connection;
/// - malformed answers are logged and ignored (the deadline still holds);
/// - a step's deadline is armed before the step, so a shell that answers
///   at once (re-entering `handle`) never has its next deadline undone.
public struct TrackerSoundMachine: Sendable {
  public struct Settings: Equatable, Sendable {
    public var attempts: Int
    public var connectTimeout: Duration
    public var stepTimeout: Duration
    public var retryDelay: Duration
    /// After "bluetoothd has not heard it": the scan needs time to hear
    /// an advertisement (a tracker's come every 2 s or so).
    public var searchDelay: Duration

    public init(
      attempts: Int = 3, connectTimeout: Duration = .seconds(20),
      stepTimeout: Duration = .seconds(5), retryDelay: Duration = .seconds(1),
      searchDelay: Duration = .seconds(3)
    ) {
      self.attempts = max(1, attempts)
      self.connectTimeout = connectTimeout
      self.stepTimeout = stepTimeout
      self.retryDelay = retryDelay
      self.searchDelay = searchDelay
    }
  }

  public enum Phase: String, Sendable {
    case idle, connecting, waiting, subscribing, writing, answering, done
  }

  public let family: TrackerProtocol.Family
  public let mode: TrackerSoundMode
  public let settings: Settings
  public private(set) var phase = Phase.idle
  /// Connects asked for so far.
  public private(set) var attempts = 0
  public private(set) var deadline: MonotonicTime?
  /// The ways in left to try on this connection, the current first.
  private var rows: [TrackerSoundRow] = []
  /// Identify: the next query's index, and what was learnt.
  private var query = 0
  private var facts: [TrackerFact] = []
  /// Every failed connect so far was "not seen".
  private var neverSeen = true
  /// A DULT answer that came before the write's acknowledgement.
  private var early: [UInt8]?

  public init(
    family: TrackerProtocol.Family, mode: TrackerSoundMode, settings: Settings = Settings()
  ) {
    self.family = family
    self.mode = mode
    self.settings = settings
  }

  public mutating func handle(_ input: TrackerSoundInput, now: MonotonicTime)
    -> [TrackerSoundAction]
  {
    var out: [TrackerSoundAction] = []
    switch (phase, input) {
    case (.idle, .start):
      let candidates = TrackerSound.candidates(family)
      guard !candidates.isEmpty else {
        finish(.strangersCannot(TrackerSound.ownerApp(family)), &out)
        break
      }
      connect(now, &out)
    case (.connecting, .connected(let keys)):
      neverSeen = false
      rows = TrackerSound.candidates(family).filter { row in
        keys.contains(row.key)
          && (mode == .ring || (mode == .silence ? row.stop != nil : row.identifies))
      }
      guard !rows.isEmpty else {
        finish(.noWayIn(noWayIn(keys)), &out)
        break
      }
      query = 0
      facts = []
      begin(now, &out)
    case (.connecting, .connectFailed(let why, let seen)):
      if seen { neverSeen = false }
      retry("cannot connect: \(why)", now, &out, searching: !seen)
    case (.subscribing, .subscribed(let error)):
      if let error {
        refuse("cannot turn on its indications: \(error)", now, &out)
      } else {
        write(now, &out)
      }
    case (.writing, .written(let error)):
      if let error {
        refuse(error, now, &out)
      } else if case .dult = rows[0].answer {
        phase = .answering
        arm(now + settings.stepTimeout, &out)
        if let bytes = early {
          early = nil
          answer(bytes, now, &out)
        }
      } else {
        done(confirmed: true, &out)
      }
    case (.writing, .value(let bytes)):
      if case .dult = rows[0].answer { early = bytes }
    case (.answering, .value(let bytes)):
      answer(bytes, now, &out)
    case (.connecting, .disconnected(let why)):
      retry("the link dropped while connecting: \(why)", now, &out)
    case (.subscribing, .disconnected(let why)), (.writing, .disconnected(let why)):
      retry("the link dropped: \(why)", now, &out)
    case (.answering, .disconnected(let why)):
      // The write went through; an AirTag-style hang-up after it is no failure.
      if mode == .identify {
        facts.append(TrackerFact(name: "link", value: "dropped (\(why))"))
        finish(.identified(via: rows[0].name, facts), &out)
      } else {
        done(confirmed: false, &out)
      }
    case (_, .timerFired):
      guard let at = deadline, now >= at else { break }
      deadline = nil
      timedOut(now, &out)
    default:
      // Late answers (a generation the shell already left) and input
      // before `.start` or after `.finish`: nothing to do.
      break
    }
    return out
  }

  // MARK: Steps

  private mutating func connect(_ now: MonotonicTime, _ out: inout [TrackerSoundAction]) {
    attempts += 1
    phase = .connecting
    early = nil
    arm(now + settings.connectTimeout, &out)
    out.append(.connect)
  }

  /// The first step on the current way in.
  private mutating func begin(_ now: MonotonicTime, _ out: inout [TrackerSoundAction]) {
    early = nil
    if rows[0].subscribeFirst {
      phase = .subscribing
      arm(now + settings.stepTimeout, &out)
      out.append(.subscribe(rows[0]))
    } else {
      write(now, &out)
    }
  }

  private mutating func write(_ now: MonotonicTime, _ out: inout [TrackerSoundAction]) {
    let row = rows[0]
    let bytes: [UInt8]
    switch mode {
    case .ring: bytes = row.start
    case .silence: bytes = row.stop ?? []
    case .identify: bytes = DULT.command(DULT.queries[query].opcode)
    }
    phase = .writing
    arm(now + settings.stepTimeout, &out)
    out.append(.write(row, bytes))
  }

  /// A DULT answer on the current way in.
  private mutating func answer(
    _ bytes: [UInt8], _ now: MonotonicTime, _ out: inout [TrackerSoundAction]
  ) {
    let row = rows[0]
    let skip = if case .dult(let s) = row.answer { s } else { 0 }
    guard bytes.count >= skip, let message = DULT.parse(Array(bytes.dropFirst(skip))) else {
      out.append(.log("\(row.name): ignored an answer of \(bytes.count) bytes (\(tagHex(bytes)))"))
      return
    }
    let sent: UInt16 =
      switch mode {
      case .ring: DULT.soundStart
      case .silence: DULT.soundStop
      case .identify: DULT.queries[query].opcode
      }
    switch message {
    case .response(let to, let status) where to == sent:
      if mode == .identify {
        if status != DULT.success {
          facts.append(
            TrackerFact(
              name: DULT.queries[query].name, value: "not given (\(DULT.statusName(status)))"))
        }
        nextQuery(now, &out)
      } else if status == DULT.success {
        done(confirmed: true, &out)
      } else if status == DULT.invalidState {
        finish(.nearOwner(via: row.name), &out)
      } else {
        refuse("it answered \(DULT.statusName(status))", now, &out)
      }
    case .data(let opcode, let payload)
    where mode == .identify && opcode == DULT.queries[query].answer:
      let q = DULT.queries[query]
      facts.append(TrackerFact(name: q.name, value: DULT.show(payload, q.format)))
      nextQuery(now, &out)
    default:
      // Sound_Completed, or an answer to something not asked now.
      break
    }
  }

  private mutating func nextQuery(_ now: MonotonicTime, _ out: inout [TrackerSoundAction]) {
    query += 1
    if query < DULT.queries.count {
      write(now, &out)
    } else {
      finish(.identified(via: rows[0].name, facts), &out)
    }
  }

  /// The current way in said no: the next one, or the answer.
  private mutating func refuse(
    _ why: String, _ now: MonotonicTime, _ out: inout [TrackerSoundAction]
  ) {
    let row = rows.removeFirst()
    out.append(.log("\(row.name) refused: \(why)"))
    if rows.isEmpty {
      finish(.refused(via: row.name, why), &out)
    } else {
      out.append(.log("trying \(rows[0].name)"))
      begin(now, &out)
    }
  }

  private mutating func done(confirmed: Bool, _ out: inout [TrackerSoundAction]) {
    let via = rows[0].name
    switch mode {
    case .ring: finish(.rang(via: via, confirmed: confirmed), &out)
    case .silence: finish(.silenced(via: via), &out)
    case .identify: finish(.identified(via: via, facts), &out)
    }
  }

  private mutating func timedOut(_ now: MonotonicTime, _ out: inout [TrackerSoundAction]) {
    let limit = phase == .connecting ? settings.connectTimeout : settings.stepTimeout
    let seconds = "\(limit.components.seconds) s"
    switch phase {
    case .waiting: connect(now, &out)
    case .connecting: retry("no connection within \(seconds)", now, &out)
    case .subscribing: retry("the tag did not answer the subscription within \(seconds)", now, &out)
    case .writing: retry("the tag did not acknowledge the write within \(seconds)", now, &out)
    case .answering:
      if mode == .identify {
        facts.append(TrackerFact(name: DULT.queries[query].name, value: "no answer"))
        nextQuery(now, &out)
      } else {
        done(confirmed: false, &out)
      }
    case .idle, .done: break
    }
  }

  /// A failed attempt: wait and connect again, or answer.
  private mutating func retry(
    _ why: String, _ now: MonotonicTime, _ out: inout [TrackerSoundAction], searching: Bool = false
  ) {
    // Whatever state the link is in, bluetoothd must not keep it.
    out.append(.disconnect)
    guard attempts < settings.attempts else {
      finish(neverSeen ? .outOfRange(attempts: attempts) : .failed(attempts: attempts, why), &out)
      return
    }
    let delay = (searching ? settings.searchDelay : settings.retryDelay) * attempts
    out.append(
      .log(
        "attempt \(attempts) of \(settings.attempts): \(why); again in \(delay.components.seconds) s"
      ))
    phase = .waiting
    arm(now + delay, &out)
  }

  private mutating func finish(_ outcome: TrackerSoundOutcome, _ out: inout [TrackerSoundAction]) {
    if attempts > 0, out.last != .disconnect { out.append(.disconnect) }
    phase = .done
    deadline = nil
    out.append(.finish(outcome))
  }

  private mutating func arm(_ at: MonotonicTime, _ out: inout [TrackerSoundAction]) {
    deadline = at
    out.append(.armTimer(at))
  }

  private func noWayIn(_ keys: Set<String>) -> String {
    let offered = TrackerSound.candidates(family).filter { keys.contains($0.key) }
    switch mode {
    case .silence where !offered.isEmpty:
      return
        "its sound cannot be stopped from here (\(offered.map(\.name).joined(separator: ", ")) has no stop); it stops by itself"
    case .identify where !offered.isEmpty:
      return
        "it does not speak DULT, the only way a stranger can ask who it is (it offers \(offered.map(\.name).joined(separator: ", ")))"
    default:
      let names = TrackerSound.candidates(family).map(\.name).joined(separator: ", ")
      return "it offers no sound service a stranger can use (looked for \(names))"
    }
  }
}

extension TrackerSound {
  /// Whose app rings a tag strangers cannot ring.
  public static func ownerApp(_ family: TrackerProtocol.Family) -> String {
    switch family {
    case .smartTag: "SmartThings"
    case .tile: "Tile"
    case .chipolo: "Chipolo"
    default: family.rawValue
    }
  }
}
