/// The simple rules a user compares Earshot's with (`rooms evaluate
/// --baseline`), run on the receivers' raw reports of one subject. Pure:
/// reports go in, in the order heard, and room changes come out, decided
/// once a second as a node or an integration would.
///
/// - `strongest(window)`: the receiver with the highest mean RSSI over the
///   last `window`, switched at once.
/// - `mqttRoom`: Home Assistant's `mqtt_room` sensor fed, once a second by
///   each receiver, the mean RSSI of its last 5 s (as an ESPresense-style
///   node would send it): a message from the current room always updates
///   it; one from another room takes over when it is closer (a stronger
///   mean) or when the current room has sent nothing for `timeout` (5 s,
///   the sensor's default). The sensor never goes away by itself
///   (`away_timeout` 0, its default).
///
/// A subject no receiver hears for `awayAfter` is away under the strongest
/// rules, so they are scored on the same terms as the rule's away.
public struct RoomBaseline: Sendable {
  public enum Kind: Sendable, Equatable {
    case strongest(window: Duration)
    case mqttRoom(timeout: Duration)

    /// Its name in `rooms evaluate --baseline`'s lines.
    public var name: String {
      switch self {
      case .strongest(let w): "strongest-\(Int(w.inSeconds.rounded()))s"
      case .mqttRoom: "mqtt_room"
      }
    }
  }

  /// The rules `--baseline` scores: strongest over 5 s and 15 s, mqtt_room.
  public static let standard: [Kind] = [
    .strongest(window: .seconds(5)), .strongest(window: .seconds(15)),
    .mqttRoom(timeout: .seconds(5)),
  ]
  /// The mean each receiver sends mqtt_room once a second.
  static let mqttMean: Duration = .seconds(5)
  static let tick: Int64 = 1_000_000
  /// Reports kept per receiver at most (memory stays bounded whatever a
  /// capture holds): 15 s of reports 200 a second.
  static let reportsPerRoom = 3000

  public let kind: Kind
  public let subject: RoomSubject
  let awayAfter: Int64
  /// The longest mean this rule takes (microseconds).
  let span: Int64
  private var reports: [String: [(t: Int64, rssi: Double)]] = [:]
  private var nextTick: Int64? = nil
  private var lastHeard: Int64 = .min
  private var room: String? = nil
  private var placed = false
  /// mqtt_room's state: the distance it holds (here the RSSI, stronger is
  /// closer) and when it was last updated.
  private var heldRSSI: Double? = nil
  private var updated: Int64 = .min
  /// Seconds decided so far (a test bounds them).
  private(set) var decisions = 0

  public init(kind: Kind, subject: RoomSubject, awayAfter: Duration = .seconds(30)) {
    self.kind = kind
    self.subject = subject
    self.awayAfter = awayAfter.wholeMicros
    switch kind {
    case .strongest(let window): span = max(window.wholeMicros, Self.tick)
    case .mqttRoom: span = Self.mqttMean.wholeMicros
    }
  }

  /// One report heard by `room`'s receiver at `t` (in the order heard).
  public mutating func report(at t: WallTime, room: String, rssi: Double) -> [RoomChange] {
    let out = advance(to: t)
    var list = reports[room, default: []]
    // Only the last `span` counts: older reports go, and the oldest past
    // the bound.
    let old = list.prefix { $0.t <= t.micros - span }.count
    let over = max(0, list.count - old - Self.reportsPerRoom + 1)
    if old + over > 0 { list.removeFirst(old + over) }
    list.append((t.micros, rssi))
    reports[room] = list
    lastHeard = t.micros
    if nextTick == nil { nextTick = t.micros + Self.tick }
    return out
  }

  /// Decides at every whole second up to `t`.
  public mutating func advance(to t: WallTime) -> [RoomChange] {
    var out: [RoomChange] = []
    while let at = nextTick, at <= t.micros {
      decide(at: at, into: &out)
      // Past every mean and the away time since the last report, each
      // second decides the same until the next report: skip the seconds
      // up to `t` (an outlier years early would otherwise cost a decision
      // per second between).
      let quiet = at - lastHeard > span + awayAfter
      nextTick = at + (quiet ? ((t.micros - at) / Self.tick + 1) : 1) * Self.tick
    }
    return out
  }

  private func mean(_ room: String, over span: Int64, at t: Int64) -> Double? {
    guard let list = reports[room] else { return nil }
    var sum = 0.0
    var n = 0
    for r in list.reversed() {
      if r.t <= t - span { break }
      if r.t <= t {
        sum += r.rssi
        n += 1
      }
    }
    return n > 0 ? sum / Double(n) : nil
  }

  private mutating func decide(at t: Int64, into out: inout [RoomChange]) {
    decisions += 1
    var next = room
    switch kind {
    case .strongest(let window):
      var best: (room: String, rssi: Double)? = nil
      for name in reports.keys.sorted() {
        guard let m = mean(name, over: window.wholeMicros, at: t) else { continue }
        if best == nil || m > best!.rssi { best = (name, m) }
      }
      if let best { next = best.room }
    case .mqttRoom(let timeout):
      // Each receiver's message of this second, in the rooms' order.
      for name in reports.keys.sorted() {
        guard let m = mean(name, over: Self.mqttMean.wholeMicros, at: t),
          reports[name]!.last!.t > t - Self.tick
        else { continue }
        if heldRSSI == nil || name == next || m > heldRSSI! || t - updated >= timeout.wholeMicros {
          next = name
          heldRSSI = m
          updated = t
        }
      }
    }
    if case .strongest = kind, lastHeard != .min, t - lastHeard >= awayAfter { next = nil }
    if next != room || (!placed && next != nil) {
      room = next
      placed = placed || next != nil
      out.append(RoomChange(t: WallTime(micros: t), subject: subject, room: next))
    }
  }
}
