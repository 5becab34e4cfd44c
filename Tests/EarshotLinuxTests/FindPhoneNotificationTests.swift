import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// A device the tests ring with; it records the phone-found notices it gets.
private final class TestDevices: AgentTransport, DeviceLink {
  let name = "test"
  let linkName = "test"
  var deviceLink: DeviceLink? { self }
  var notices: [DeviceID] = []

  func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool {
    notices.append(device)
    return true
  }
  func start() {}
  func stop() {}
  func agentEvent(_ event: AgentEvent) {}
}

/// A real notification server for one test: dunst under Xvfb on a private
/// session bus. Its context menu ("dunstctl context") runs `dmenu`, here a
/// script that saves the menu it is shown and picks the line holding the
/// text in `choice` (so a test clicks an action the way a user does).
final class DesktopSession {
  let bus: PrivateBus
  let directory: String
  private var processes: [Process] = []
  private let dunstctl: String

  var menuFile: String { directory + "/menu.txt" }
  var choiceFile: String { directory + "/choice.txt" }
  var environment: [String: String] {
    [
      "DBUS_SESSION_BUS_ADDRESS": bus.address, "DISPLAY": display, "HOME": directory,
      "XDG_CONFIG_HOME": directory + "/config", "XDG_RUNTIME_DIR": directory,
    ]
  }
  private var display = ""

  init(file: StaticString = #filePath, line: UInt = #line) throws {
    var tools: [String: String] = [:]
    for (tool, package) in [
      ("Xvfb", "xvfb"), ("dunst", "dunst"), ("dunstctl", "dunst"), ("dbus-send", "dbus-bin"),
    ] {
      tools[tool] = try Self.require(tool, package, file: file, line: line)
    }
    dunstctl = tools["dunstctl"]!
    bus = try PrivateBus(activation: false, file: file, line: line)
    directory = try makeTempDirectory()
    let pick = directory + "/pick.sh"
    try """
    #!/bin/sh
    cat > '\(menuFile).part'
    grep -m1 -F "$(cat '\(choiceFile)')" '\(menuFile).part'
    mv '\(menuFile).part' '\(menuFile)'
    """.write(toFile: pick, atomically: true, encoding: .utf8)
    chmod(pick, 0o755)
    try "[global]\n    dmenu = \(pick)\n".write(
      toFile: directory + "/dunstrc", atomically: true, encoding: .utf8)

    // Xvfb picks a free display and prints its number.
    let xvfb = Process()
    xvfb.executableURL = URL(fileURLWithPath: tools["Xvfb"]!)
    xvfb.arguments = ["-displayfd", "1", "-nolisten", "tcp"]
    let out = Pipe()
    xvfb.standardOutput = out
    xvfb.standardError = FileHandle.nullDevice
    try xvfb.run()
    processes.append(xvfb)
    let number = String(decoding: firstLine(of: out), as: UTF8.self)
      .trimmingCharacters(in: .whitespaces)
    guard Int(number) != nil else {
      XCTFail("Xvfb printed no display: \(number)", file: file, line: line)
      throw XCTSkip("failed: no X server")
    }
    display = ":" + number

    let dunst = Process()
    dunst.executableURL = URL(fileURLWithPath: tools["dunst"]!)
    dunst.arguments = ["-config", directory + "/dunstrc"]
    dunst.environment = environment
    dunst.standardOutput = FileHandle.nullDevice
    dunst.standardError = FileHandle.nullDevice
    try dunst.run()
    processes.append(dunst)
    // Up once dunst owns org.freedesktop.Notifications.
    let deadline = Date().addingTimeInterval(10)
    while (try? ctl(["is-paused"]))?.status != 0 {
      guard Date() < deadline else {
        XCTFail("dunst did not come up on the private bus", file: file, line: line)
        throw XCTSkip("failed: no dunst")
      }
      usleep(50_000)
    }
  }

  private static func require(
    _ tool: String, _ package: String, file: StaticString, line: UInt
  ) throws -> String {
    if let path = Earshot.tool(tool) { return path }
    try requireResource("\(tool) (package \(package))", file: file, line: line)
  }

  /// Runs dunstctl against this session's dunst.
  func ctl(_ args: [String]) throws -> Earshot.Result {
    try Earshot.run(args, executable: dunstctl, environment: environment)
  }

  /// How many notifications dunst has on screen.
  func displayed() -> Int? {
    (try? ctl(["count", "displayed"])).flatMap {
      Int($0.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }
  }

  /// Opens the context menu of the notification on screen and picks the
  /// action whose line holds `action`; returns the menu shown.
  func pick(_ action: String) throws -> String {
    try? FileManager.default.removeItem(atPath: menuFile)
    try action.write(toFile: choiceFile, atomically: true, encoding: .utf8)
    // dunst runs the menu on its own, so dunstctl returns before the menu
    // script has read it; and a busy dunst can drop the request. So wait
    // for the script's whole copy, asking again every 2 s, 10 s at most.
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      _ = try ctl(["context"])
      let retry = Date().addingTimeInterval(2)
      while Date() < retry {
        if let menu = try? String(contentsOfFile: menuFile, encoding: .utf8) { return menu }
        usleep(20_000)
      }
    }
    return ""
  }

  deinit {
    for p in processes.reversed() where p.isRunning {
      p.terminate()
      p.waitUntilExit()
    }
    bus.stop()
    try? FileManager.default.removeItem(atPath: directory)
  }
}

final class FindPhoneNotificationTests: XCTestCase {
  private var directory = ""
  private var logs: [String] = []
  private let keys = DeviceID(link: "test", name: "Keys")
  private let watch = DeviceID(link: "test", name: "Watch")

  override func setUpWithError() throws {
    directory = try makeTempDirectory()
    logs = []
  }
  override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

  /// An agent in this process with the notification on the bus at `address`.
  private func agent(address: String, timeout: Double = 60) throws -> (
    Daemon, TestDevices, FindPhoneNotification
  ) {
    var config = Config()
    config.findPhone.timeout = timeout
    let audio = RecordingAudio(volume: VolumeSetting(level: 0.3, muted: false))
    audio.stateFile = "\(directory)/state/find-phone-volume"
    // The agent earshot run builds, its session bus the private one.
    var surroundings = AgentSurroundings.test(
      directory: directory, audio: .given(alert: audio, volume: audio),
      log: { [unowned self] in self.logs.append($0) })
    surroundings.sessionBus = address
    let agent = try Agent(config: config.inTest(directory), surroundings: surroundings)
    let devices = TestDevices()
    agent.daemon.add(devices)
    agent.notification.start()
    return (agent.daemon, devices, agent.notification)
  }

  private func ring(_ daemon: Daemon, as device: DeviceID) -> RequestOutcome? {
    var outcome: RequestOutcome?
    daemon.perform(.findStart, from: Requester(device: device)) { outcome = $0 }
    return outcome
  }

  func testTheTextNamesTheRequesters() {
    XCTAssertEqual(
      FindPhoneNotification.text(for: [keys]).summary, "Keys is looking for this laptop")
    XCTAssertEqual(
      FindPhoneNotification.text(for: [keys, watch]).summary,
      "Keys and Watch are looking for this laptop")
    XCTAssertEqual(
      FindPhoneNotification.text(for: [keys, DeviceID(link: "mqtt", name: "Keys"), watch])
        .summary, "Keys and Watch are looking for this laptop", "one name once")
  }

  func testFoundItFindsTheLaptopAndTheDeviceGetsItsNotice() throws {
    let desktop = try DesktopSession()
    let (daemon, devices, notification) = try agent(address: desktop.bus.address)
    defer { notification.stop() }
    guard case .find(.ringing?, _)? = ring(daemon, as: keys) else {
      return XCTFail("the ring did not start")
    }
    spin(daemon.loop, "dunst shows the notification") { desktop.displayed() == 1 }

    let menu = try desktop.pick("Found it")
    XCTAssertTrue(menu.contains("#Found it (Keys is looking for this laptop)"), menu)
    XCTAssertTrue(menu.contains("#Stop (Keys is looking for this laptop)"), menu)
    spin(daemon.loop, "the found notice reaches Keys") { devices.notices == [self.keys] }
    XCTAssertEqual(daemon.find.status.lastEnd, .found)
    spin(daemon.loop, "the notification is gone") { desktop.displayed() == 0 }
    let history = try desktop.ctl(["history"]).stdout
    XCTAssertTrue(history.contains("Keys is looking for this laptop"), history)
    XCTAssertTrue(
      history.contains(FindPhoneNotification.text(for: [keys]).body), "the body: \(history)")
  }

  func testStopSilencesWithoutANoticeAndANewRequesterReplacesTheNotification() throws {
    let desktop = try DesktopSession()
    let (daemon, devices, notification) = try agent(address: desktop.bus.address)
    defer { notification.stop() }
    _ = ring(daemon, as: keys)
    spin(daemon.loop, "dunst shows the notification") { desktop.displayed() == 1 }
    guard case .find(.joined?, _)? = ring(daemon, as: watch) else {
      return XCTFail("Watch did not join the ring")
    }
    // The menu shows the replaced notification's summary; still one on screen.
    spin(daemon.loop, "the notification names both") {
      (try? desktop.pick("no such action"))?.contains(
        "#Stop (Keys and Watch are looking for this laptop)") == true
    }
    XCTAssertEqual(desktop.displayed(), 1, "replaced, not a second notification")

    let menu = try desktop.pick("#Stop")
    XCTAssertTrue(menu.contains("#Found it (Keys and Watch are looking for this laptop)"), menu)
    spin(daemon.loop, "the ring stops") { daemon.find.status.state == .idle }
    XCTAssertEqual(daemon.find.status.lastEnd, .deviceStop)
    XCTAssertEqual(daemon.find.status.requesters, [])
    XCTAssertEqual(devices.notices, [], "Stop sends no phone-found notice")
    XCTAssertEqual(daemon.find.status.outstandingNotices, 0)
  }

  func testTheRingTimingOutClosesTheNotification() throws {
    let desktop = try DesktopSession()
    let (daemon, devices, notification) = try agent(address: desktop.bus.address, timeout: 1)
    defer { notification.stop() }
    _ = ring(daemon, as: keys)
    spin(daemon.loop, "dunst shows the notification") { desktop.displayed() == 1 }
    spin(daemon.loop, "the ring times out") { daemon.find.status.state == .idle }
    XCTAssertEqual(daemon.find.status.lastEnd, .timeout)
    spin(daemon.loop, "the agent closes the notification") { desktop.displayed() == 0 }
    XCTAssertEqual(devices.notices, [])
    XCTAssertTrue(
      try desktop.ctl(["history"]).stdout.contains("Keys is looking for this laptop"),
      "dunst had it, and closed it")
  }

  func testWithoutASessionBusTheAgentRingsAsBeforeAfterOneLogLine() throws {
    let (daemon, devices, notification) = try agent(
      address: "unix:path=\(directory)/no-such-bus")
    defer { notification.stop() }
    XCTAssertEqual(logs.filter { $0.hasPrefix("notification:") }.count, 1, "\(logs)")
    _ = ring(daemon, as: keys)
    var found: RequestOutcome?
    daemon.perform(.found, from: Requester(device: nil, name: "user")) { found = $0 }
    guard case .found(.stopping([keys]), _)? = found else {
      return XCTFail("found: \(String(describing: found))")
    }
    XCTAssertEqual(devices.notices, [keys])
    XCTAssertEqual(logs.filter { $0.hasPrefix("notification:") }.count, 1, "\(logs)")
  }

  func testWithoutANotificationServerTheAgentRingsAsBeforeAfterOneLogLine() throws {
    let bus = try PrivateBus(activation: false)
    let (daemon, devices, notification) = try agent(address: bus.address)
    defer { notification.stop() }
    XCTAssertEqual(logs.filter { $0.hasPrefix("notification:") }, [], "the bus is there")
    for device in [keys, watch] {
      _ = ring(daemon, as: device)
      spin(daemon.loop, "the Notify call fails") {
        !notification.waitingForTheServer && self.logs.contains { $0.hasPrefix("notification:") }
      }
      var found: RequestOutcome?
      daemon.perform(.found, from: Requester(device: nil, name: "user")) { found = $0 }
      guard case .found(.stopping([device]), _)? = found else {
        return XCTFail("found: \(String(describing: found))")
      }
      spin(daemon.loop, "the ring ends") { daemon.find.status.state == .idle }
    }
    XCTAssertEqual(devices.notices, [keys, watch])
    XCTAssertEqual(logs.filter { $0.hasPrefix("notification:") }.count, 1, "\(logs)")
  }
}
