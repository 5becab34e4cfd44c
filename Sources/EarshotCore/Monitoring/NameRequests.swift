/// The monitor's name requests: before a region kept inside by a device is
/// declared outside, the device is asked by name (a BR/EDR Remote Name
/// Request to its identity address), since phones go quiet for tens of
/// seconds when locked, yet answer a page. Devices are positions in the
/// monitor's `DeviceDirectory`.
///
/// Guarantees:
/// - a device is asked at most once per `every` of one quiet spell (heard
///   since its last request, it may be asked again at once);
/// - an unanswered request (not found, or no answer at all) is repeated
///   `repeats` times before the exit goes ahead: a page lost to
///   interference is not an absence;
/// - an exit waits at most `timeout` for an answer, and `every` after a
///   found one (then the device is asked again);
/// - each request is handed to the shell once (`take`).
struct NameRequests: Sendable {
  /// A page times out after 5.12 s (the controller's default); its answer
  /// is waited for a little longer.
  static let timeoutMicros: Int64 = 6_000_000
  /// At most one request per device this often (paging takes radio time
  /// from Wi-Fi too); an answer keeps the device present for as long.
  static let everyMicros: Int64 = 15_000_000
  static let repeats = 3

  /// Per device: until when its regions' exits wait (a request's answer,
  /// or the presence an answer proved).
  private var hold: [Int: Int64] = [:]
  private var lastRequest: [Int: Int64] = [:]
  /// Per device: its requests in a row that went unanswered.
  private var misses: [Int: Int] = [:]
  /// Per device: a request is out and its answer has not come.
  private var awaited: Set<Int> = []
  private var wanted: [BDAddress] = []

  /// Until when device `n`'s exits wait, if they do.
  func hold(of n: Int) -> Int64? { hold.isEmpty ? nil : hold[n] }

  /// Device `n` was heard: whatever was asked is answered.
  mutating func heard(_ n: Int) {
    // Asked at every report of a known device, and nothing is asked of
    // almost all of them: no hashing then (four lookups were ~5 % of the
    // live identity path, docs/performance.md).
    guard !hold.isEmpty || !misses.isEmpty || !awaited.isEmpty else { return }
    hold[n] = nil
    misses[n] = nil
    awaited.remove(n)
  }

  /// Device `n`'s answer at `t`; `false` when nothing was asked of it.
  mutating func answered(_ n: Int, found: Bool, at t: Int64) -> Bool {
    guard hold[n] != nil else { return false }
    awaited.remove(n)
    hold[n] = found ? t &+ Self.everyMicros : t
    if found { misses[n] = nil } else { misses[n, default: 0] += 1 }
    return true
  }

  /// At an exit of a region device `n` (at `address`) kept inside: whether
  /// to ask it by name and hold the exit for the answer, rather than exit
  /// now. `lastHeard`: when it was last heard. `t` is the present (an exit
  /// due earlier and found late is asked about now: the request can only go
  /// out now, and its hold counts from then).
  mutating func ask(_ n: Int, at address: BDAddress, lastHeard: Int64?, at t: Int64) -> Bool {
    if let h = hold[n], h > t { return true }
    // A request whose answer never came (a command lost, a shell that
    // sent it late) is an unanswered one: asked again, not taken as leave
    // to exit.
    if awaited.remove(n) != nil { misses[n, default: 0] += 1 }
    let missed = misses[n] ?? 0
    // Unanswered as often as it is asked: the exit goes ahead.
    guard missed <= Self.repeats else {
      hold[n] = nil
      return false
    }
    // Rate-limited per quiet spell: heard since the last request, it may
    // be asked again.
    if missed == 0, let last = lastRequest[n], t - last < Self.everyMicros,
      (lastHeard ?? .min) <= last
    {
      hold[n] = nil
      return false
    }
    lastRequest[n] = t
    hold[n] = t &+ Self.timeoutMicros
    awaited.insert(n)
    wanted.append(address)
    return true
  }

  /// The requests to send now, each once.
  mutating func take() -> [BDAddress] {
    defer { wanted.removeAll() }
    return wanted
  }
}
