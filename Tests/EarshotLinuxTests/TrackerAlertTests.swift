import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// A tracker that follows, as people see it: the desktop notification
/// (dunst on a private bus, clicked the way a user does), the hook.
final class TrackerAlertTests: XCTestCase {
  private var directory = ""
  private var logs: [String] = []

  override func setUpWithError() throws {
    directory = try makeTempDirectory()
    logs = []
  }
  override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

  /// The agent of `earshot run --input` on the following capture (an
  /// AirTag following from 00:40 at high), its session bus `address`.
  private func agent(address: String?, _ edit: (inout Config) -> Void = { _ in }) throws -> Agent {
    let capture = directory + "/following.btsnoop"
    try writeFollowingCapture(capture)
    var config = Config()
    config.trackers.enabled = true
    config.trackers.sensitivity = .high
    edit(&config)
    var surroundings = AgentSurroundings.test(
      directory: directory, reports: CaptureReports(path: capture),
      log: { [unowned self] in self.logs.append($0) })
    surroundings.sessionBus = address
    return try Agent(config: config.inTest(directory), surroundings: surroundings)
  }

  func testOnlyTheProtocolsAStrangerCanRingOfferRingIt() {
    let ringable = TrackerProtocol.Family.allCases.filter(\.ringable).map(\.rawValue)
    XCTAssertEqual(ringable, ["find_my", "find_hub", "dult", "pebblebee"])
  }

  func testTheNotificationOffersItsActionsAndDetailsShowsTheList() throws {
    let desktop = try DesktopSession()
    let agent = try agent(address: desktop.bus.address)
    let notification = try XCTUnwrap(agent.trackerNotification)
    notification.start()
    defer { notification.stop() }
    try agent.start()
    spin(agent.loop, "dunst shows the notification") { desktop.displayed() == 1 }

    let summary = "An AirTag is travelling with you"
    let menu = try desktop.pick("#Details")
    for action in ["Ring it", "Ignore", "Details"] {
      XCTAssertTrue(menu.contains("#\(action) (\(summary))"), menu)
    }
    // Details replaces it with the tracker as `earshot trackers` lists it.
    spin(agent.loop, "the details are shown") { notification.answered == 2 }
    _ = try desktop.ctl(["close-all"])
    spin(agent.loop, "closed") { desktop.displayed() == 0 }
    let history = try desktop.ctl(["history"]).stdout
    XCTAssertTrue(
      history.contains(
        "1: Find My (separated): airtag separated at C3:11:22:33:44:55, first 5340 s ago, last 0 s ago, 90 sighting(s), -60 dBm, 3 place(s), FOLLOWING"
      ), "the watch's row at the end of the capture: \(history)")
    // Replaced in place: the first body is gone from the server.
    XCTAssertFalse(history.contains("Heard at"), history)
    let row = try XCTUnwrap(agent.trackers?.watch.rows.first)
    XCTAssertEqual(
      TrackerAlert.text(for: row).body,
      "Heard at 3 places (90 sightings); Find My (separated), C3:11:22:33:44:55.")
  }

  func testIgnoreTrustsTheTrackerForADay() throws {
    let desktop = try DesktopSession()
    let agent = try agent(address: desktop.bus.address)
    let notification = try XCTUnwrap(agent.trackerNotification)
    notification.start()
    defer { notification.stop() }
    try agent.start()
    spin(agent.loop, "dunst shows the notification") { desktop.displayed() == 1 }
    let watch = try XCTUnwrap(agent.trackers)
    XCTAssertEqual(watch.watch.rows.first?.trust, TrackerTrust.none)

    _ = try desktop.pick("#Ignore")
    spin(agent.loop, "the tracker is trusted") {
      watch.watch.rows.first?.trust != TrackerTrust.none
    }
    let latest = watch.watch.latest
    XCTAssertEqual(
      watch.watch.rows.first?.trust, .until(latest + TrackerAlert.ignoreFor), "a day")
    spin(agent.loop, "the notification is gone") { desktop.displayed() == 0 }
  }

  /// Ring it asks the agent to ring the tracker through bluetoothd: here
  /// the system bus is absent, so the answer is the failure, in the body.
  func testRingItRingsThroughBlueZAndShowsTheAnswer() throws {
    let desktop = try DesktopSession()
    let agent = try agent(address: desktop.bus.address)
    let notification = try XCTUnwrap(agent.trackerNotification)
    notification.start()
    defer { notification.stop() }
    try agent.start()
    spin(agent.loop, "dunst shows the notification") { desktop.displayed() == 1 }
    _ = try desktop.pick("#Ring it")
    let line =
      "tracker 1 (Find My (separated) at C3:11:22:33:44:55): failed after 3 tries: cannot connect: the system D-Bus is not reachable"
    spin(agent.loop, "the answer is shown") {
      self.logs.contains("trackers: " + line) && notification.waiting == 0
        && desktop.displayed() == 1
    }
    XCTAssertTrue(
      logs.contains("trackers: ring tracker 1 (Find My (separated) at C3:11:22:33:44:55)"),
      "\(self.logs)")
    _ = try desktop.ctl(["close-all"])
    spin(agent.loop, "closed") { desktop.displayed() == 0 }
    let history = try desktop.ctl(["history"]).stdout
    XCTAssertTrue(history.contains(line), history)
    XCTAssertFalse(history.contains("Heard at"), "replaced by the answer: \(history)")
    XCTAssertEqual(agent.trackers?.watch.rows.first?.trust, TrackerTrust.none, "not ignored")
  }

  func testWithoutANotificationServerOneLogLine() throws {
    let bus = try PrivateBus(activation: false)
    let agent = try agent(address: bus.address)
    let notification = try XCTUnwrap(agent.trackerNotification)
    notification.start()
    defer { notification.stop() }
    try agent.start()
    spin(agent.loop, "the Notify call fails") { notification.waiting == 0 }
    XCTAssertEqual(
      logs.filter { $0.hasPrefix("tracker notification: cannot show it") }.count, 1, "\(logs)")
    XCTAssertTrue(logs.contains { $0.hasPrefix("tracker following: tracker 1 ") }, "\(logs)")
  }

  func testTheHookNamesTheTracker() throws {
    let out = directory + "/hook.env"
    let text =
      "[trackers]\nenabled = true\non_following = /bin/sh -c 'env > \(out).part && mv \(out).part \(out)'\nhook_timeout = 5\n"
    let parsed = try Config.build(IniReader.parse(text, file: "t.conf"))
    let agent = try agent(address: nil) {
      $0.trackers.onFollowing = parsed.trackers.onFollowing
      $0.trackers.hookTimeout = parsed.trackers.hookTimeout
    }
    XCTAssertEqual(parsed.trackers.hookTimeout, 5)
    try agent.start()
    let deadline = Date().addingTimeInterval(30)
    while !FileManager.default.fileExists(atPath: out) && Date() < deadline { usleep(20_000) }
    agent.monitor?.driver.finish()
    let env = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").map(
      String.init)
    for line in [
      "EARSHOT_EVENT=tracker_following", "EARSHOT_TRACKER=1",
      "EARSHOT_TRACKER_PROTOCOL=Find My (separated)", "EARSHOT_TRACKER_KIND=airtag",
      "EARSHOT_TRACKER_ADDRESS=C3:11:22:33:44:55", "EARSHOT_TRACKER_FIRST_SEEN_S_AGO=2400",
      "EARSHOT_TRACKER_PLACES=2", "EARSHOT_TRACKER_SIGHTINGS=41",
    ] {
      XCTAssertTrue(env.contains(line), "\(line) in \(env.filter { $0.hasPrefix("EARSHOT") })")
    }
    XCTAssertTrue(
      logs.contains { $0.hasPrefix("trackers on_following /bin/sh: exited with status 0") },
      "\(logs)")
  }
}
