import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotLinux

/// ESPresense nodes as `earshot rooms` agents, from the same simulated
/// house as Earshot's: two rooms are ESP32 nodes (their receivers'
/// advertisements through `ESPresenseNodeModel`, the firmware's messages
/// byte for byte, published at the firmware's moments), two are Earshot
/// agents; the walker is placed as four Earshot agents place it.
extension RoomsIntegrationTests {
  /// The test house with a fourth receiver, in the hall.
  var fourReceivers: String {
    spec.replacingOccurrences(
      of: "[beacon \"walker\"]",
      with: "[receiver \"hall\"]\nposition = 8 4.75\nbias = -0.5\n\n[beacon \"walker\"]")
  }

  /// What the node in `room` publishes for its receiver's capture: (capture
  /// time in µs, topic, payload), and the capture's first record time.
  func nodeMessages(_ site: Site, room: String) throws -> (
    first: Int64, messages: [(t: Int64, topic: String, payload: String)]
  ) {
    let bytes = try [UInt8](
      Data(contentsOf: URL(fileURLWithPath: site.dir + "/house/\(room).btsnoop")))
    var node = ESPresenseNodeModel(room: room)
    var replay = CaptureReplay()
    var first: Int64? = nil
    var out: [(Int64, String, String)] = []
    try bytes.withUnsafeBytes { raw in
      try replay.run(raw) { t, report in
        first = first ?? t
        guard let beacon = TrackedBeacon.decode(advertisingData: report.data),
          let rssi = report.rssi, let id = ESPresenseFormat.id(.beacon(beacon.id))
        else { return }
        if let m = node.heard(
          id: id, mac: ESPresenseFormat.mac(report.address), power: Int(beacon.measuredPower),
          rssi: Int(rssi), at: UInt64(t / 1000))
        {
          out.append((t, m.topic, m.payload))
        }
      }
    }
    return (try XCTUnwrap(first), out)
  }

  /// Publishes the nodes' messages at their moments (the first record of
  /// each node's capture at `at`, as an agent replaying it would play it):
  /// one `mosquitto_pub -l` per topic, fed by a thread. Returns how many.
  func startNodes(_ site: Site, rooms: [String], at: Int) throws -> Int {
    let pub = try XCTUnwrap(Earshot.tool("mosquitto_pub"), "mosquitto_pub (mosquitto-clients)")
    var timed: [(wall: Double, topic: String, payload: String)] = []
    for room in rooms {
      let r = try Earshot.run(
        [
          "-h", "127.0.0.1", "-p", "\(site.broker.port)", "-r", "-q", "1", "-t",
          "espresense/rooms/\(room)/status", "-m", "online",
        ], executable: pub)
      XCTAssertEqual(r.status, 0, r.stderr)
      let (first, messages) = try nodeMessages(site, room: room)
      timed += messages.map {
        (Double(at) + Double($0.t - first) / 1e6 / pace, $0.topic, $0.payload)
      }
    }
    timed.sort { $0.wall < $1.wall }
    var pipes: [String: Pipe] = [:]
    for topic in Set(timed.map(\.topic)) {
      let p = Process()
      p.executableURL = URL(fileURLWithPath: pub)
      p.arguments = ["-h", "127.0.0.1", "-p", "\(site.broker.port)", "-l", "-t", topic]
      let pipe = Pipe()
      p.standardInput = pipe
      try p.run()
      pipes[topic] = pipe
      addTeardownBlock {
        if p.isRunning {
          p.terminate()
          p.waitUntilExit()
        }
      }
    }
    let schedule = timed.map { ($0.wall, $0.topic, $0.payload) }
    let writers = pipes.mapValues { $0.fileHandleForWriting }
    Thread.detachNewThread {
      for m in schedule {
        let wait = m.0 - Date().timeIntervalSince1970
        if wait > 0 { usleep(useconds_t(wait * 1e6)) }
        writers[m.1]?.write(Data((m.2 + "\n").utf8))
      }
      for w in writers.values { try? w.close() }
    }
    return timed.count
  }

  func score(_ site: Site, rooms: [String]) throws -> RoomScore {
    let truth = try truth(site)
    let end = Int64(1_767_225_600 + 300) * 1_000_000
    return RoomScore.score(
      truth: truth, decided: timeline(site).rule, covered: Set(rooms), end: end)
  }

  func testTwoESPresenseNodesAndTwoAgentsPlaceTheWalkerAsFourAgentsDo() throws {
    let all = ["living", "kitchen", "bedroom", "hall"]
    // Four Earshot agents.
    var agents = try makeSite(spec: fourReceivers)
    try startAggregator(&agents)
    usleep(300_000)
    try startAgents(&agents, rooms: all)
    waitCapture(agents, seconds: 300 + 40)
    agents.aggregator!.terminate()
    agents.aggregator!.waitUntilExit()
    let four = try score(agents, rooms: all)

    // Bedroom and hall are ESPresense nodes; living and kitchen agents.
    var mixed = try makeSite(spec: fourReceivers)
    try startAggregator(&mixed, rooms: "espresense_nodes = true\n")
    usleep(300_000)
    let at = try startAgents(&mixed, rooms: ["living", "kitchen"])
    let sent = try startNodes(mixed, rooms: ["bedroom", "hall"], at: at)
    waitCapture(mixed, seconds: 300 + 40)
    mixed.aggregator!.terminate()
    mixed.aggregator!.waitUntilExit()
    let nodes = try score(mixed, rooms: all)
    let walkerRooms = timeline(mixed).rule.filter { $0.beacon == walker }.compactMap(\.room)

    let report =
      "four agents: \(four.summary(awayAfter: 30))\ntwo nodes (\(sent) messages) and two agents: "
      + nodes.summary(awayAfter: 30)
    print(report)
    for s in [four, nodes] {
      XCTAssertGreaterThan(s.scoredSeconds, 400, report)
      XCTAssertLessThan(s.wrongShare, 0.05, report)
      XCTAssertEqual(s.stationaryChanges, 0, report)
      XCTAssertLessThanOrEqual(try XCTUnwrap(s.medianConfirm, report), 10, report)
    }
    XCTAssertEqual(walkerRooms.prefix(1), ["living"], report)
    XCTAssertTrue(walkerRooms.contains("bedroom"), "a node's room is decided: \(walkerRooms)")
    // As well as four agents: within a point of their wrong share.
    XCTAssertLessThanOrEqual(nodes.wrongShare, four.wrongShare + 0.01, report)
  }
}
