import EarshotCore
import XCTest

/// The guarantees in MQTTShownState's doc comment, and the Home Assistant
/// rows built on it.
final class MQTTShownStateTests: XCTestCase {
  private func model(capacity: Int = 256) -> MQTTShownState {
    MQTTShownState(availabilityTopic: "e/status", eventsTopic: "e/events", eventCapacity: capacity)
  }

  private func layer(_ topic: String) -> Int {
    if topic.hasSuffix("/config") { return 0 }
    if topic.hasSuffix("/available") { return 2 }
    if topic == "e/status" { return 3 }
    return 1
  }

  func testConnectSendsDiscoveryThenStatesThenAvailabilityThenOnlineThenEvents() {
    var m = model()
    XCTAssertEqual(m.event("{\"event\":\"state\"}"), [])
    // Shown in an order that interleaves the layers.
    _ = m.show(
      .region("lab"),
      [
        .init("e/region/lab/available", "online", .availability),
        .init("e/region/lab/state", "inside", .state),
        .init("ha/binary_sensor/n/region_lab/config", "{}", .discovery),
      ])
    _ = m.show(.controls, [.init("ha/number/n/volume/config", "{}", .discovery)])
    _ = m.show(.controls, [.init("e/volume/state", "40", .state)])
    let out = m.connected()
    XCTAssertEqual(
      out.map(\.topic),
      [
        "ha/binary_sensor/n/region_lab/config", "ha/number/n/volume/config",
        "e/region/lab/state", "e/volume/state", "e/region/lab/available", "e/status", "e/events",
      ])
    XCTAssertEqual(out[5], .init("e/status", "online", retain: true))
    XCTAssertEqual(out[6], .init("e/events", "{\"event\":\"state\"}", retain: false))
    XCTAssertTrue(out.dropLast().allSatisfy(\.retain))
  }

  /// Random interleavings of shows, removals, events, connects and
  /// disconnects: every connect sequence is in layer order with `online`
  /// after every retained topic and before every kept event; nothing
  /// retained is sent while disconnected; events arrive in the order
  /// raised, only dropped when the queue was full; and after a last
  /// connect the broker holds exactly what the model says.
  func testRandomSequencesKeepTheOrderAndTheBrokerAgrees() {
    var rng = SeededRandom(state: 24)
    let topics = [
      "ha/binary_sensor/n/region_a/config", "e/region/a/state", "e/region/a/available",
      "ha/sensor/n/beacon_b/config", "e/beacon/b/state",
    ]
    for _ in 0..<300 {
      var m = model(capacity: 4)
      var broker: [String: String] = [:]
      var events: [String] = []
      var raised: [String] = []
      var dropped = 0
      func apply(_ out: [MQTTShownState.Message]) {
        for msg in out {
          if msg.topic == "e/events" {
            events.append(msg.payload)
          } else {
            broker[msg.topic] = msg.payload.isEmpty ? nil : msg.payload
          }
        }
      }
      func connect() {
        dropped += m.takeDroppedEvents()
        let out = m.connected()
        let layers = out.filter(\.retain).map { layer($0.topic) }
        XCTAssertEqual(layers, layers.sorted(), "\(out)")
        guard let online = out.firstIndex(where: { $0.topic == "e/status" }) else {
          return XCTFail("no online in \(out)")
        }
        XCTAssertTrue(out[..<online].allSatisfy(\.retain))
        XCTAssertTrue(out[(online + 1)...].allSatisfy { $0.topic == "e/events" })
        apply(out)
      }
      for step in 0..<40 {
        var out: [MQTTShownState.Message] = []
        switch rng.next() % 7 {
        case 0: connect()
        case 1: m.disconnected()
        case 6: out = m.takeDeferredClears()
        case 2:
          raised.append("ev\(step)")
          out = m.event("ev\(step)")
        case 3: out = m.remove(rng.next() % 2 == 0 ? .region("a") : .beacon(beacon))
        default:
          let t = topics[Int(rng.next() % UInt64(topics.count))]
          let entity: MQTTEntity = t.contains("region") ? .region("a") : .beacon(beacon)
          let l: MQTTShownState.Layer =
            t.hasSuffix("config") ? .discovery : t.hasSuffix("available") ? .availability : .state
          out = m.show(entity, [.init(t, "p\(rng.next() % 3)", l)])
        }
        if !m.isConnected { XCTAssertEqual(out, [], "sent while disconnected") }
        apply(out)
      }
      m.disconnected()
      connect()
      apply(m.takeDeferredClears())
      XCTAssertFalse(m.hasDeferredClears)
      XCTAssertEqual(raised.count - events.count, dropped)
      var rest = events[...]
      for r in raised where rest.first == r { rest = rest.dropFirst() }
      XCTAssertTrue(rest.isEmpty, "events out of order: \(events) of \(raised)")
      for t in topics { XCTAssertEqual(broker[t], m.payload(of: t), t) }
    }
  }

  func testUnchangedPayloadsAreNotSentAgainButResendDoes() {
    var m = model()
    _ = m.connected()
    XCTAssertEqual(m.show(.controls, [.init("e/volume/state", "40", .state)]).count, 1)
    XCTAssertEqual(m.show(.controls, [.init("e/volume/state", "40", .state)]), [])
    XCTAssertEqual(m.resend("e/volume/state"), [.init("e/volume/state", "40", retain: true)])
    XCTAssertEqual(m.show(.controls, [.init("e/volume/state", "41", .state)]).count, 1)
    m.disconnected()
    XCTAssertEqual(m.resend("e/volume/state"), [])
    XCTAssertEqual(m.show(.controls, [.init("e/volume/state", "42", .state)]), [])
    XCTAssertEqual(m.connected().first, .init("e/volume/state", "42", retain: true))
  }

  func testEventsWhileAwayAreBoundedDroppingTheOldest() {
    var m = model(capacity: 3)
    for i in 0..<5 { XCTAssertEqual(m.event("\(i)"), []) }
    XCTAssertEqual(m.droppedEvents, 2)
    XCTAssertEqual(m.takeDroppedEvents(), 2)
    XCTAssertEqual(m.droppedEvents, 0)
    XCTAssertEqual(m.connected().filter { $0.topic == "e/events" }.map(\.payload), ["2", "3", "4"])
    XCTAssertEqual(m.event("5"), [.init("e/events", "5", retain: false)])
  }

  func testRemovingClearsDiscoveryAtOnceAndTheOtherTopicsAfter() {
    var m = model()
    _ = m.connected()
    _ = m.show(
      .region("lab"),
      [
        .init("ha/binary_sensor/n/region_lab/config", "{}", .discovery),
        .init("e/region/lab/state", "inside", .state),
        .init("e/region/lab/available", "online", .availability),
      ])
    _ = m.show(.region("desk"), [.init("e/region/desk/state", "outside", .state)])
    XCTAssertFalse(m.hasDeferredClears)
    XCTAssertEqual(
      m.remove(.region("lab")), [.init("ha/binary_sensor/n/region_lab/config", "", retain: true)])
    XCTAssertTrue(m.hasDeferredClears)
    XCTAssertEqual(m.entities, [.region("desk")])
    XCTAssertNil(m.payload(of: "e/region/lab/state"))
    XCTAssertEqual(
      m.takeDeferredClears(),
      [
        .init("e/region/lab/state", "", retain: true),
        .init("e/region/lab/available", "", retain: true),
      ])
    XCTAssertFalse(m.hasDeferredClears)
    XCTAssertEqual(m.takeDeferredClears(), [])
    m.disconnected()
    XCTAssertEqual(m.connected().map(\.topic), ["e/region/desk/state", "e/status"])
  }

  func testRemovedWhileAwayIsClearedOnTheNextConnection() {
    var m = model()
    _ = m.show(.region("lab"), [.init("ha/binary_sensor/n/region_lab/config", "{}", .discovery)])
    _ = m.show(.region("lab"), [.init("e/region/lab/state", "inside", .state)])
    _ = m.show(.region("desk"), [.init("e/region/desk/state", "outside", .state)])
    _ = m.connected()
    m.disconnected()
    XCTAssertEqual(m.remove(.region("lab")), [])
    XCTAssertEqual(m.takeDeferredClears(), [], "nothing while disconnected")
    XCTAssertEqual(
      m.connected(),
      [
        .init("ha/binary_sensor/n/region_lab/config", "", retain: true),
        .init("e/region/desk/state", "outside", retain: true),
        .init("e/status", "online", retain: true),
      ])
    XCTAssertEqual(m.takeDeferredClears(), [.init("e/region/lab/state", "", retain: true)])
    XCTAssertEqual(m.connected().filter { $0.payload.isEmpty }, [], "cleared once")
  }

  func testShowingARemovedTopicAgainCancelsItsClear() {
    var m = model()
    _ = m.connected()
    _ = m.show(.region("lab"), [.init("e/region/lab/state", "inside", .state)])
    _ = m.remove(.region("lab"))
    _ = m.show(.region("lab"), [.init("e/region/lab/state", "outside", .state)])
    XCTAssertEqual(m.takeDeferredClears(), [])
    XCTAssertEqual(m.payload(of: "e/region/lab/state"), "outside")
  }

  func testStoppingSaysOfflineOnlyWhileConnected() {
    var m = model()
    XCTAssertEqual(m.stopping(), [])
    _ = m.connected()
    XCTAssertEqual(m.stopping(), [.init("e/status", "offline", retain: true)])
  }

  func testRecordsAreRetainedEvenWhenEntitiesAreNot() {
    var m = MQTTShownState(availabilityTopic: "e/status", eventsTopic: "e/events", retain: false)
    _ = m.connected()
    XCTAssertEqual(
      m.show(.record("r/agent/lab"), [.init("r/agent/lab", "{}", .state)]),
      [.init("r/agent/lab", "{}", retain: true)])
    XCTAssertEqual(
      m.show(.controls, [.init("e/volume/state", "1", .state)]),
      [.init("e/volume/state", "1", retain: false)])
  }

  // MARK: Home Assistant rows

  func testRoomsEntitiesAreNotNamedTwiceAndTheTrackerReadsPlainText() throws {
    let topics = RoomTopics(prefix: "earshot/rooms", shards: 16)
    let d = RoomsDiscovery(
      topics: topics, aggregatorStatus: "earshot/rooms/aggregator/x", version: "1",
      prefix: "homeassistant")
    let messages = d.messages(for: beacon)
    let sensor = try JSONParser.parse(Array(messages[0].payload.utf8))
    let tracker = try JSONParser.parse(Array(messages[1].payload.utf8))
    XCTAssertEqual(sensor["device"]?["name"]?.string, "Beacon 1/10")
    XCTAssertEqual(sensor["name"]?.string, "Room")
    XCTAssertEqual(tracker["name"], .null, "the tracker is the device itself")
    XCTAssertEqual(tracker["state_topic"]?.string, topics.location(.beacon(beacon)))
    XCTAssertNil(tracker["value_template"])
    XCTAssertEqual(sensor["state_topic"]?.string, topics.state(.beacon(beacon)))
  }

  func testFindPhoneSensorListsEveryState() throws {
    let d = HomeAssistantDiscovery(
      topics: MQTTTopics(base: "earshot/laptop"), hostname: "laptop", version: "1")
    let m = d.findPhone()
    XCTAssertEqual(m.topic, "homeassistant/sensor/earshot_laptop/find_phone/config")
    let j = try JSONParser.parse(Array(m.payload.utf8))
    XCTAssertEqual(j["state_topic"]?.string, "earshot/laptop/find/state")
    XCTAssertEqual(j["json_attributes_topic"]?.string, "earshot/laptop/find/attributes")
    XCTAssertEqual(
      j["options"]?.array?.compactMap(\.string), FindStatus.State.allCases.map(\.rawValue))
  }

  // MARK: Session takeover

  func testTakeoverIsSaidOnceAfterThreeShortConnectionsInARow() {
    var d = SessionTakeoverDetector(shortSpan: 5, threshold: 3)
    var t = MonotonicTime(nanos: 1_000_000_000)
    func session(_ seconds: Double) -> Bool {
      d.connected(at: t)
      t = t.adding(seconds: seconds)
      let said = d.disconnected(at: t)
      t = t.adding(seconds: 1)
      return said
    }
    XCTAssertEqual([session(0.1), session(0.2), session(4.9)], [false, false, true])
    XCTAssertFalse(session(0.1), "said once per run")
    XCTAssertFalse(session(60), "a connection that lasts resets the run")
    XCTAssertEqual([session(1), session(1), session(1)], [false, false, true])
    XCTAssertFalse(d.disconnected(at: t), "no connection, nothing to say")
  }

  private let beacon = TrackedID(
    uuid: BeaconUUID(high: 0x8F2C_1A3E_5B7D_4E90, low: 0xA1C2_3D4E_5F60_7182), major: 1,
    minor: 10)
}
