/// Earshot's MQTT topic layout under one base topic (default
/// `earshot/<hostname>`). Names users pick (regions) are turned into safe
/// topic segments; the same slug is used in Home Assistant ids.
public struct MQTTTopics: Sendable, Equatable {
  public let base: String

  public init(base: String) {
    self.base = base.hasSuffix("/") ? String(base.dropLast()) : base
  }

  /// `online` / `offline`, retained; `offline` is also the last will.
  public var availability: String { base + "/status" }
  /// Region events and find-phone states as JSON lines (not retained).
  public var events: String { base + "/events" }

  // The entities' topics are in their rows (`MQTTEntities`); these few
  // are read elsewhere too.

  public func beaconState(_ id: TrackedID) -> String {
    base + "/beacon/" + Self.slug(id) + "/state"
  }
  public var volumeState: String { base + "/volume/state" }
  public var muteState: String { base + "/mute/state" }

  public var commandPrefix: String { base + "/command/" }
  /// Ring a tag: `command/ring_tag/SLUG`; PRESS (or empty, ON, high, 2)
  /// rings it, STOP (OFF, none, 0) silences it.
  public var ringTagPrefix: String { commandPrefix + "ring_tag/" }

  /// Lower case letters, digits, `-` and `_`; everything else becomes `_`.
  public static func slug(_ name: String) -> String {
    var out = ""
    for scalar in name.lowercased().unicodeScalars {
      switch scalar {
      case "a"..."z", "0"..."9", "-", "_": out.unicodeScalars.append(scalar)
      default: out += "_"
      }
    }
    return out.isEmpty ? "_" : out
  }

  /// iBeacons `uuid-major-minor` as always; the others with their kind
  /// first (`altbeacon-uuid-id2-id3`, `eddystone-namespace-instance`):
  /// `TrackedID.slugText`, which `TrackedID(slug:)` reads back.
  public static func slug(_ id: TrackedID) -> String { slug(id.slugText) }
}

/// A command received on a command topic. Parsing is strict: anything else
/// is rejected with a reason that the shell logs (and otherwise ignores).
public enum MQTTCommand: Equatable, Sendable {
  case ring
  case found
  case setVolume(Double)  // 0...1
  case setMute(Bool)
  /// Ring the tag whose topic slug this is (`command/ring_tag/SLUG`).
  case ringTag(slug: String, level: AlertLevel)

  public static func parse(topic: String, payload: [UInt8], topics: MQTTTopics) -> Result<
    MQTTCommand, MQTTCommandError
  > {
    guard topic.hasPrefix(topics.commandPrefix) else { return .failure(.unknownTopic(topic)) }
    let text = String(decoding: payload, as: UTF8.self).trimmingWhitespace()
    if topic.hasPrefix(topics.ringTagPrefix) {
      let slug = String(topic.dropFirst(topics.ringTagPrefix.count))
      guard !slug.isEmpty, !slug.contains("/") else { return .failure(.unknownTopic(topic)) }
      switch text.uppercased() {
      case "", "PRESS", "ON", "HIGH", "2": return .success(.ringTag(slug: slug, level: .high))
      case "MILD", "1": return .success(.ringTag(slug: slug, level: .mild))
      case "STOP", "OFF", "NONE", "0": return .success(.ringTag(slug: slug, level: .none))
      default:
        return .failure(
          .badPayload(topic, "expected PRESS, MILD or STOP, got '\(text.prefix(40))'"))
      }
    }
    switch String(topic.dropFirst(topics.commandPrefix.count)) {
    case "ring": return .success(.ring)
    case "found": return .success(.found)
    case "volume":
      guard let v = Double(text), v.isFinite, (0...100).contains(v) else {
        return .failure(
          .badPayload(topic, "expected a number from 0 to 100, got '\(text.prefix(40))'"))
      }
      return .success(.setVolume(v / 100))
    case "mute":
      switch text.uppercased() {
      case "ON", "TRUE", "1": return .success(.setMute(true))
      case "OFF", "FALSE", "0": return .success(.setMute(false))
      default: return .failure(.badPayload(topic, "expected ON or OFF, got '\(text.prefix(40))'"))
      }
    default: return .failure(.unknownTopic(topic))
    }
  }
}

public enum MQTTCommandError: Error, Equatable, CustomStringConvertible {
  case unknownTopic(String)
  case badPayload(String, String)

  public var description: String {
    switch self {
    case .unknownTopic(let t): "unknown command topic \(t)"
    case .badPayload(let t, let why): "ignored command on \(t): \(why)"
    }
  }
}

extension String {
  func trimmingWhitespace() -> String {
    var s = Substring(self)
    while let f = s.first, f.isWhitespace { s = s.dropFirst() }
    while let l = s.last, l.isWhitespace { s = s.dropLast() }
    return String(s)
  }
}
