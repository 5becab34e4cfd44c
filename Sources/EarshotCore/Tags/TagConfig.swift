/// `[tag "NAME"]`: a key-finder tag the agent keeps connected (one section
/// per tag). Its button rings the laptop; `earshot ring NAME` rings it.
public struct TagConfig: Sendable, Equatable {
  public var name: String
  /// Line of the `[tag "NAME"]` header, for messages.
  public var line: Int
  /// The tag's address (required).
  public var address: BDAddress? = nil
  /// BlueZ adapter to connect from; `nil`: the first one BlueZ lists.
  public var adapter: String? = nil
  /// What a press does while the laptop rings for this tag.
  public var secondPress = TagSecondPress.found
  /// Ring the laptop when the tag goes out of reach.
  public var onLost = TagLostAction.none
  /// Commands run when the tag is lost and when it is back.
  public var hookLost: [String]? = nil
  public var hookBack: [String]? = nil
  public var hookTimeout = 10.0
  /// Written to the tag's Link Loss service on every connect; `nil`: left alone.
  public var linkLossAlert: AlertLevel? = nil

  public init(name: String, line: Int) {
    self.name = name
    self.line = line
  }

  /// The requester a tag's button speaks as: `tag:NAME`.
  public var device: DeviceID { DeviceID(link: TagConfig.link, name: name) }
  public static let link = "tag"
}

/// `second_press`: a press while the laptop already rings for the tag.
public enum TagSecondPress: String, Sendable, Equatable, CaseIterable {
  /// The user has the laptop (as `earshot found`).
  case found
  /// The tag withdraws its request (a device stop: no notice).
  case stop
  /// Nothing happens; the ring goes on until found or its timeout.
  case ignore
}

/// `on_lost`.
public enum TagLostAction: String, Sendable, Equatable, CaseIterable {
  /// Ring the laptop as the tag (stopped again when it comes back).
  case alert
  case none
}

extension Config {
  /// Keys of `[tag "NAME"]`.
  public static let tagKeys: [ConfigKey<TagConfig>] = [
    .init(
      "address", "The tag's Bluetooth address AA:BB:CC:DD:EE:FF (required).",
      set: { t, v in
        guard let a = BDAddress(v) else {
          throw ConfigValueError("'\(v)' is not an address like AA:BB:CC:DD:EE:FF")
        }
        t.address = a
      }, show: { $0.address?.description ?? "" }),
    .init(
      "adapter", "BlueZ adapter to connect from, such as hci0; empty = the first one.",
      set: { t, v in
        guard !v.isEmpty else {
          t.adapter = nil
          return
        }
        guard v.hasPrefix("hci"), let n = Int(v.dropFirst(3)), n >= 0 else {
          throw ConfigValueError("expected an adapter name such as hci0, or empty, got '\(v)'")
        }
        t.adapter = v
      }, show: { $0.adapter ?? "" }),
    .init(
      "second_press",
      "A press while the laptop rings for this tag: found (as earshot found), stop (withdraw) or ignore.",
      set: { t, v in t.secondPress = try ConfigValue.choice(v, TagSecondPress.self) },
      show: { $0.secondPress.rawValue }),
    .init(
      "on_lost",
      "alert: ring the laptop when the tag goes out of reach (stops when it is back); none.",
      set: { t, v in t.onLost = try ConfigValue.choice(v, TagLostAction.self) },
      show: { $0.onLost.rawValue }),
    .init(
      "link_loss_alert",
      "Alert Level written to the tag's Link Loss service on connect (none, mild, high); empty = not written.",
      set: { t, v in
        guard !v.isEmpty else {
          t.linkLossAlert = nil
          return
        }
        guard let level = AlertLevel(name: v) else {
          throw ConfigValueError("expected none, mild, high (or 0, 1, 2), or empty, got '\(v)'")
        }
        t.linkLossAlert = level
      }, show: { $0.linkLossAlert?.description ?? "" }),
    .init(
      "hook_lost",
      "Command run when the tag is lost (tag_lost), split like a shell would; empty = none.",
      set: { t, v in t.hookLost = v.isEmpty ? nil : try ConfigValue.command(v) },
      show: { $0.hookLost.map(ShellWords.join) ?? "" }),
    .init(
      "hook_back", "Command run when the tag is back (tag_back), the same way; empty = none.",
      set: { t, v in t.hookBack = v.isEmpty ? nil : try ConfigValue.command(v) },
      show: { $0.hookBack.map(ShellWords.join) ?? "" }),
    .init(
      "hook_timeout", "Seconds a tag hook may run before it is killed.",
      set: { t, v in t.hookTimeout = try ConfigValue.double(v, in: 0.1...3600) },
      show: { ConfigValue.show($0.hookTimeout) }),
  ]
}
