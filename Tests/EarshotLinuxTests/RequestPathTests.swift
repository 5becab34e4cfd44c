import EarshotCore
import EarshotLinux
import Foundation
import XCTest

/// A transport the agent has never heard of: a pager with one button. It
/// is one adapter (this class) and nothing else: the daemon performs its
/// requests, delivers its notices and sends it events without a switch on
/// where they come from.
private final class PagerTransport: AgentTransport, DeviceLink {
  let name = "pager"
  let linkName = "pager"
  var deviceLink: DeviceLink? { self }
  let device = DeviceID(link: "pager", name: "belt")
  private unowned let agent: Daemon
  var outcomes: [RequestOutcome] = []
  var notices: [NoticeID] = []
  var findStates: [FindStatus.State] = []
  var started = false
  var stopped = false

  init(agent: Daemon) { self.agent = agent }

  /// The pager's wire: one byte per request.
  func receive(_ byte: UInt8) {
    let request: DeviceRequest
    switch byte {
    case 0x01: request = .findStart
    case 0x02: request = .findStop
    case 0x03: request = .noticeResult(notices.last ?? 0, .accepted)
    default: request = .volumeGet
    }
    agent.perform(request, from: Requester(device: device)) { self.outcomes.append($0) }
  }

  func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool {
    notices.append(id)
    return true
  }
  func start() { started = true }
  func stop() { stopped = true }
  func agentEvent(_ event: AgentEvent) {
    if case .find(let status) = event { findStates.append(status.state) }
  }
}

final class RequestPathTests: XCTestCase {
  private var directory = ""

  override func setUpWithError() throws { directory = try makeTempDirectory() }
  override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

  private func daemon(_ name: String, audio: RecordingAudio? = nil) throws -> Daemon {
    var options = Daemon.Options(
      socketPath: "\(directory)/\(name).sock", stateDirectory: "\(directory)/\(name)-state")
    options.handleSignals = false
    return try Daemon(
      loop: try EventLoop(), options: options, version: "test", alert: audio, volume: audio,
      log: { _ in })
  }

  func testANewTransportIsOneAdapter() throws {
    let audio = RecordingAudio(volume: VolumeSetting(level: 0.3, muted: false))
    let agent = try daemon("pager", audio: audio)
    audio.stateFile = "\(directory)/pager-state/find-phone-volume"
    let pager = PagerTransport(agent: agent)
    agent.add(pager)

    pager.receive(0x01)
    guard case .find(.ringing?, let status)? = pager.outcomes.last else {
      return XCTFail("find start: \(pager.outcomes)")
    }
    XCTAssertEqual(status.requesters, [pager.device])
    XCTAssertEqual(audio.calls.last, "startAlert", "the same coordinator rang the alert")
    XCTAssertTrue(pager.findStates.contains(.ringing), "the pager heard the ring start")

    // The user finds the laptop: the pager gets the phone-found notice through
    // its own link and answers it on its own wire.
    var found: RequestOutcome?
    agent.perform(.found, from: Requester(device: nil, name: "user")) { found = $0 }
    guard case .found(.stopping(let notify), _)? = found else {
      return XCTFail("found: \(String(describing: found))")
    }
    XCTAssertEqual(notify, [pager.device])
    XCTAssertEqual(pager.notices.count, 1)
    pager.receive(0x03)
    XCTAssertEqual(pager.outcomes.last, .noticeRecorded(pager.notices[0]))
    XCTAssertEqual(agent.find.status.outstandingNotices, 0)

    // Volume rules are the agent's, not the transport's: the volume now.
    pager.receive(0x10)
    XCTAssertEqual(pager.outcomes.last, .volume(VolumeSetting(level: 0.3, muted: false)))
  }

  func testOnlyADeviceCanRingAndAVolumeChangeIsRefusedWhileRinging() throws {
    let audio = RecordingAudio(volume: VolumeSetting(level: 0.3, muted: false))
    let agent = try daemon("rules", audio: audio)
    audio.stateFile = "\(directory)/rules-state/find-phone-volume"
    var outcome: RequestOutcome?
    agent.perform(.findStart, from: Requester(device: nil, name: "cli")) { outcome = $0 }
    XCTAssertEqual(outcome.flatMap(refusal), .notADevice)
    let phone = Requester(device: DeviceID(link: "socket", name: "phone"))
    agent.perform(.findStart, from: phone) { outcome = $0 }
    agent.perform(.volumeSet(0.1), from: phone) { outcome = $0 }
    XCTAssertEqual(outcome.flatMap(refusal), .busy)
    agent.perform(.shutter(2), from: phone) { outcome = $0 }
    XCTAssertEqual(outcome.flatMap(refusal), .unavailable, "no shutter in this agent")
    agent.perform(.noticeResult(99, .accepted), from: phone) { outcome = $0 }
    XCTAssertEqual(outcome.flatMap(refusal), .unknownNotice)
  }

  private func refusal(_ o: RequestOutcome) -> RequestError.Code? {
    if case .refused(let e) = o { return e.code }
    return nil
  }

  /// The parts attached in opposite orders give the same `status` and the
  /// same event order.
  func testAnyOrderOfPartsGivesTheSameAgent() throws {
    let config = try Config.build(
      IniReader.parse(
        """
        [region "desk"]
        uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182
        """, file: "t.conf"))
    func build(_ name: String, reversed: Bool) throws -> (Daemon, [String]) {
      let agent = try daemon(name)
      var order: [String] = []
      final class Named: AgentTransport {
        let name: String
        let seen: (String) -> Void
        var deviceLink: DeviceLink? { nil }
        init(_ name: String, _ seen: @escaping (String) -> Void) {
          self.name = name
          self.seen = seen
        }
        func start() {}
        func stop() {}
        func agentEvent(_ event: AgentEvent) { seen(name) }
      }
      var steps: [() throws -> Void] = [
        {
          let driver = try MonitorDriver(
            config: config, emitRange: false, stateFile: nil, runHooks: false, output: { _ in },
            log: { _ in })
          agent.attach(monitor: AgentMonitor(loop: agent.loop, driver: driver))
        },
        { agent.attach(shutter: ShutterDriver(settings: ShutterConfig(), loop: agent.loop)) },
        {
          agent.attach(
            media: MediaDriver(settings: MediaConfig(), library: MediaLibrary(), loop: agent.loop)
          )
        },
        { agent.add(Named("zulu") { order.append($0) }) },
        { agent.add(Named("alpha") { order.append($0) }) },
      ]
      if reversed { steps.reverse() }
      for step in steps { try step() }
      agent.deviceGone(DeviceID(link: "socket", name: "nobody"))  // no event
      agent.perform(.findStart, from: Requester(device: DeviceID(link: "socket", name: "p"))) {
        _ in
      }
      return (agent, order)
    }
    let (a, orderA) = try build("a", reversed: false)
    let (b, orderB) = try build("b", reversed: true)
    XCTAssertEqual(orderA, orderB)
    XCTAssertEqual(Array(orderA.prefix(2)), ["alpha", "zulu"], "events reach transports by name")
    func status(_ d: Daemon) -> [(String, JSONValue)] {
      var out: RequestOutcome?
      d.perform(.status, from: Requester(device: nil, name: "t")) { out = $0 }
      guard case .status(let s)? = out else { return [] }
      return (s.objectFields ?? []).filter { $0.0 != "agent" && $0.0 != "find" }
    }
    let sa = status(a)
    let sb = status(b)
    XCTAssertEqual(
      sa.map(\.0),
      ["volume", "monitoring", "regions", "beacons", "adapter", "scan", "shutter", "media"])
    XCTAssertEqual(sa.map(\.0), sb.map(\.0))
    XCTAssertEqual(JSONValue.object(sa), JSONValue.object(sb))
  }
}
