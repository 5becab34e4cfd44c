/// What this agent shows on MQTT, as the broker should hold it: each
/// retained topic with its payload, the entity it belongs to and the layer
/// that orders its publication; and the events raised while the broker was
/// away. The bridge only sends what this returns, so the broker agrees with
/// it.
///
/// Guarantees (MQTTShownStateTests):
/// - On connect every discovery config goes out before any state, every
///   state before any entity's availability, and the agent's `online` last:
///   a subscriber that sees the agent online already holds each entity's
///   current state and availability, never a previous run's.
/// - Within one `show` batch the same order holds (an entity's state is
///   published before it becomes available).
/// - Nothing is sent while disconnected; a retained payload the broker
///   already holds from this connection is not sent again.
/// - Events raised while disconnected are kept in order, at most
///   `eventCapacity` (the oldest dropped and counted), and sent after the
///   `online` of the next connection.
/// - Removing an entity forgets it and clears each of its retained topics
///   with an empty retained payload: its discovery configs at once (or
///   first thing on the next connection), its other topics only through
///   `takeDeferredClears`, which the shell calls a moment later. Home
///   Assistant removes an entity in a task of its own, and an empty state
///   payload that reaches the entity first is an error in its log
///   ("Erroneous JSON", an undefined `value_json`).
public struct MQTTShownState: Sendable {
  public enum Layer: Int, Comparable, Sendable {
    case discovery, state, availability
    public static func < (a: Layer, b: Layer) -> Bool { a.rawValue < b.rawValue }
  }

  public struct Message: Equatable, Sendable, CustomStringConvertible {
    public let topic: String
    public let payload: String
    public let retain: Bool
    public init(_ topic: String, _ payload: String, retain: Bool) {
      self.topic = topic
      self.payload = payload
      self.retain = retain
    }
    public var description: String { "\(topic) \(payload)\(retain ? " (retained)" : "")" }
  }

  /// One retained topic to show.
  public struct Item: Sendable {
    public let topic: String
    public let payload: String
    public let layer: Layer
    public init(_ topic: String, _ payload: String, _ layer: Layer) {
      self.topic = topic
      self.payload = payload
      self.layer = layer
    }
  }

  private struct Entry: Sendable {
    var payload: String
    let layer: Layer
    let entity: MQTTEntity
    let retain: Bool
    /// Whether the broker has this payload from the current connection.
    var sent: Bool
  }

  /// The agent's own availability (`online`, and `offline` as the last will).
  public let availabilityTopic: String
  public let eventsTopic: String
  /// `[mqtt] retain`: whether entity topics are retained. The agent's
  /// availability and `.record` topics always are.
  public let retain: Bool
  public let eventCapacity: Int
  public private(set) var isConnected = false
  /// Events dropped since the last connection because the queue was full.
  public private(set) var droppedEvents = 0

  private var entries: [String: Entry] = [:]
  /// Topics in first-show order (stable publication order within a layer).
  private var order: [String] = []
  private var pendingEvents: [(topic: String, payload: String)] = []
  /// Topics of removed entities still to clear on the broker.
  private var pendingClears: [(layer: Layer, topic: String)] = []

  public init(
    availabilityTopic: String, eventsTopic: String, retain: Bool = true, eventCapacity: Int = 256
  ) {
    self.availabilityTopic = availabilityTopic
    self.eventsTopic = eventsTopic
    self.retain = retain
    self.eventCapacity = max(1, eventCapacity)
  }

  /// The entities shown now.
  public var entities: Set<MQTTEntity> { Set(entries.values.map(\.entity)) }

  /// What the broker should hold on `topic`, if anything.
  public func payload(of topic: String) -> String? { entries[topic]?.payload }

  /// Sets the retained payloads of an entity's topics; returns what to
  /// send now, in layer order.
  public mutating func show(_ entity: MQTTEntity, _ items: [Item]) -> [Message] {
    var out: [(Layer, Message)] = []
    for item in items {
      pendingClears.removeAll { $0.1 == item.topic }
      let retain: Bool
      if case .record = entity { retain = true } else { retain = self.retain }
      if var e = entries[item.topic] {
        guard e.payload != item.payload || !e.sent else { continue }
        e.payload = item.payload
        e.sent = isConnected
        entries[item.topic] = e
      } else {
        entries[item.topic] = Entry(
          payload: item.payload, layer: item.layer, entity: entity, retain: retain,
          sent: isConnected)
        order.append(item.topic)
      }
      if isConnected { out.append((item.layer, Message(item.topic, item.payload, retain: retain))) }
    }
    return Self.sorted(out)
  }

  /// Sends a topic's payload again even though the broker holds it (a
  /// refused command: the asker's view goes back to what is true).
  public mutating func resend(_ topic: String) -> [Message] {
    guard isConnected, let e = entries[topic] else { return [] }
    return [Message(topic, e.payload, retain: e.retain)]
  }

  /// A non-retained event (on `topic`, the events topic when nil): sent
  /// now, or kept for the next connection.
  public mutating func event(_ payload: String, on topic: String? = nil) -> [Message] {
    let topic = topic ?? eventsTopic
    if isConnected { return [Message(topic, payload, retain: false)] }
    if pendingEvents.count == eventCapacity {
      pendingEvents.removeFirst()
      droppedEvents += 1
    }
    pendingEvents.append((topic, payload))
    return []
  }

  /// The connection is up: everything in layer order, `online`, then the
  /// events kept meanwhile.
  public mutating func connected() -> [Message] {
    isConnected = true
    var out: [(Layer, Message)] = pendingClears.filter { $0.layer == .discovery }.map {
      ($0.layer, Message($0.topic, "", retain: true))
    }
    pendingClears.removeAll { $0.layer == .discovery }
    for topic in order {
      guard var e = entries[topic] else { continue }
      e.sent = true
      entries[topic] = e
      out.append((e.layer, Message(topic, e.payload, retain: e.retain)))
    }
    var messages = Self.sorted(out)
    messages.append(Message(availabilityTopic, "online", retain: true))
    messages += pendingEvents.map { Message($0.topic, $0.payload, retain: false) }
    pendingEvents.removeAll()
    return messages
  }

  /// Takes and resets the count of events dropped while disconnected.
  public mutating func takeDroppedEvents() -> Int {
    defer { droppedEvents = 0 }
    return droppedEvents
  }

  public mutating func disconnected() {
    isConnected = false
    for topic in order { entries[topic]?.sent = false }
  }

  /// A clean stop: the agent says `offline` (kill -9 leaves it to the will).
  public func stopping() -> [Message] {
    isConnected ? [Message(availabilityTopic, "offline", retain: true)] : []
  }

  /// Forgets an entity and returns the empty retained payloads that clear
  /// its discovery configs (kept for the next connection while
  /// disconnected); its other topics wait for `takeDeferredClears`.
  public mutating func remove(_ entity: MQTTEntity) -> [Message] {
    var out: [Message] = []
    for topic in order where entries[topic]?.entity == entity {
      let e = entries.removeValue(forKey: topic)!
      if isConnected && e.layer == .discovery {
        out.append(Message(topic, "", retain: true))
      } else {
        pendingClears.append((e.layer, topic))
      }
    }
    order.removeAll { entries[$0] == nil }
    return out
  }

  /// Whether state or availability topics of removed entities wait to be
  /// cleared (the shell then calls `takeDeferredClears` a moment later).
  public var hasDeferredClears: Bool { pendingClears.contains { $0.layer != .discovery } }

  /// The empty retained payloads for the state and availability topics of
  /// removed entities, once their discovery configs have gone out; nothing
  /// while disconnected.
  public mutating func takeDeferredClears() -> [Message] {
    guard isConnected, !pendingClears.contains(where: { $0.layer == .discovery }) else {
      return []
    }
    defer { pendingClears.removeAll() }
    return pendingClears.map { Message($0.topic, "", retain: true) }
  }

  /// Stable sort by layer: order within a layer is first-show order.
  private static func sorted(_ items: [(Layer, Message)]) -> [Message] {
    items.enumerated().sorted { a, b in
      a.element.0 != b.element.0 ? a.element.0 < b.element.0 : a.offset < b.offset
    }.map(\.element.1)
  }
}
