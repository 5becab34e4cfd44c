/// What a person is shown and told when a tracker follows: the desktop
/// notification's text and actions, its details (as `earshot trackers`
/// lists the tracker) and the hook's environment. Pure: the agent's shell
/// shows and runs them.
public enum TrackerAlert {
  /// How long "Ignore" trusts a tracker: a day, the window of the rule, so
  /// a stranger's tag that keeps following alerts again tomorrow.
  public static let ignoreFor: Duration = .seconds(86_400)

  /// The notification's summary and body.
  public static func text(for row: TrackerRow) -> (summary: String, body: String) {
    let what = row.frame.kind.displayName
    let summary = "\(what) \(row.frame.kind == .airPods ? "are" : "is") travelling with you"
    var body =
      "Heard at \(row.places) places (\(row.sightings) sightings); \(row.frame.row.name), \(row.address)."
    if !row.frame.family.ringable {
      body += " \(row.frame.row.name) tags cannot be rung by a stranger."
    }
    return (summary, body)
  }

  /// The notification's actions as (key, label), "Ring it" only where the
  /// protocol lets a stranger ring the tag.
  public static func actions(for row: TrackerRow) -> [(key: String, label: String)] {
    var list: [(key: String, label: String)] = []
    if row.frame.family.ringable { list.append(("ring", "Ring it")) }
    list.append(("ignore", "Ignore"))
    list.append(("details", "Details"))
    return list
  }

  /// The tracker as the running agent's `earshot trackers` lists it, with
  /// `now` the watch's latest time.
  public static func details(_ row: TrackerRow, now: MonotonicTime) -> String {
    var line =
      "\(row.number.value): \(row.frame.row.name): \(row.frame.kind.rawValue) \(row.frame.state.rawValue) at \(row.address), first \(secondsAgo(row.firstSeen, now)) s ago, last \(secondsAgo(row.lastSeen, now)) s ago, \(row.sightings) sighting(s)"
    if let rssi = row.rssi { line += ", \(rssi) dBm" }
    line += ", \(row.places) place(s)"
    if row.trust != .none { line += ", trusted" }
    if row.following != nil { line += ", FOLLOWING" }
    return line
  }

  /// The hook's environment (`[trackers] on_following`), names as the
  /// region hooks have theirs.
  public static func environment(_ row: TrackerRow, now: MonotonicTime) -> [(String, String)] {
    [
      ("EARSHOT_EVENT", "tracker_following"),
      ("EARSHOT_TRACKER", String(row.number.value)),
      ("EARSHOT_TRACKER_PROTOCOL", row.frame.row.name),
      ("EARSHOT_TRACKER_KIND", row.frame.kind.rawValue),
      ("EARSHOT_TRACKER_ADDRESS", row.address.description),
      ("EARSHOT_TRACKER_FIRST_SEEN_S_AGO", String(secondsAgo(row.firstSeen, now))),
      ("EARSHOT_TRACKER_PLACES", String(row.places)),
      ("EARSHOT_TRACKER_SIGHTINGS", String(row.sightings)),
    ]
  }

  private static func secondsAgo(_ t: MonotonicTime, _ now: MonotonicTime) -> UInt64 {
    t.nanos(until: now) / 1_000_000_000
  }
}

extension TrackerProtocol.Family {
  /// Whether a stranger can make the tag play a sound (the issue's facts:
  /// AirTag and Find My accessories, DULT and Find Hub, Pebblebee; Tile
  /// and SmartTag cannot, and no source says Chipolo can).
  public var ringable: Bool {
    switch self {
    case .findMy, .findHub, .dult, .pebblebee: true
    case .smartTag, .tile, .chipolo: false
    }
  }
}

extension TrackerKind {
  /// The kind as a person reads it in a notification.
  public var displayName: String {
    switch self {
    case .appleDevice: "An Apple device"
    case .airTag: "An AirTag"
    case .findMyAccessory: "A Find My accessory"
    case .airPods: "AirPods"
    case .findHubTag: "A Find Hub tag"
    case .dultApple, .dultGoogle: "A tracker"
    case .smartTag: "A SmartTag"
    case .tile: "A Tile"
    case .chipolo: "A Chipolo"
    case .pebblebee: "A Pebblebee"
    }
  }
}
