import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// A beacon format of the user's own, end to end through the binaries: the
/// config's `[layout "acme"]` and a region `beacon = acme:…`; `earshot
/// simulate scenario --config` writes the frames as such beacons send them;
/// `earshot run` replays them with a real mosquitto and a proximity log.
/// The region enters and exits, Home Assistant gets the beacon by name,
/// `status` and `earshot log --config` show it.
extension AgentIntegrationTests {
  func testARegionOfAUserLayoutsBeaconsThroughTheAgent() throws {
    let broker = try Broker()
    let db = dir + "/log.sqlite"
    let configText = """
      [layout "acme"]
      layout = m:2-3=ac1e,i:4-9,i:10-11l,p:12-12:-3,d:13-13
      [region "crate"]
      beacon = acme:010203040506
      exit_after = 10
      [log]
      enabled = true
      path = \(db)

      """ + mqttSection(broker)
    let configPath = dir + "/acme.conf"
    try configText.write(toFile: configPath, atomically: true, encoding: .utf8)
    let spec = dir + "/acme.scenario"
    try """
    [scenario]
    start = 1767225600
    duration = 120
    seed = 2
    [beacon "crate-7"]
    id = acme:010203040506:002a
    interval = 1
    loss = 0.1
    present = 15-60
    [beacon "another-crate"]
    id = acme:0a0b0c0d0e0f:0001
    interval = 1
    present = 0-120
    """.write(toFile: spec, atomically: true, encoding: .utf8)
    let capture = dir + "/acme.btsnoop"
    let sim = try Earshot.run([
      "simulate", "scenario", "--spec", spec, "--config", configPath, "--write", capture,
    ])
    XCTAssertEqual(sim.status, 0, sim.stderr)
    // Without the config the scenario cannot name the kind: a clear error.
    let unnamed = try Earshot.run([
      "simulate", "scenario", "--spec", spec, "--write", capture + ".x",
    ])
    XCTAssertNotEqual(unnamed.status, 0)
    XCTAssertTrue(unnamed.stderr.contains("acme.scenario:"), unnamed.stderr)

    let agent = try AgentProcess(config: configText, arguments: ["--input", capture])
    // MQTT's slug of acme:010203040506:002a (the kind is the agent's, not
    // this process's).
    let slug = "acme-010203040506-002a"
    var r: [String: String] = [:]
    XCTAssertTrue(
      try eventually {
        r = try broker.retained()
        return r["\(base)/region/crate/state"] == "outside"
      }, "\(r)\n\(agent.log)")
    let status = try agent.client().ok(.status)
    XCTAssertEqual(agent.stop(), 0, agent.log)
    XCTAssertNotNil(
      r.keys.first { $0.hasPrefix("homeassistant/") && $0.contains(slug) }, "\(r.keys.sorted())")
    XCTAssertNotNil(status["regions"], "\(status)")

    // The log keeps the kind; given the config, it reads it back by name.
    let log = try Earshot.run([
      "log", "--db", db, "--config", configPath, "--beacon", "acme:010203040506",
    ])
    XCTAssertEqual(log.status, 0, log.stderr)
    let lines = log.stdout.split(separator: "\n")
    XCTAssertTrue(
      lines.contains { $0.contains("enter") && $0.contains("beacon acme:010203040506:002a") },
      log.stdout)
    XCTAssertTrue(lines.contains { $0.contains("exit") && $0.contains("crate") }, log.stdout)
    XCTAssertTrue(
      lines.contains { $0.contains("sighting") && $0.contains("acme:010203040506:002a") },
      log.stdout)
    XCTAssertFalse(log.stdout.contains("0a0b0c0d0e0f"), "the other crate is not this region's")
    // Without it the kind is unknown: a clear error, nothing read wrong.
    let bare = try Earshot.run(["log", "--db", db, "--beacon", "acme:010203040506"])
    XCTAssertNotEqual(bare.status, 0)
    XCTAssertTrue(bare.stderr.contains("--beacon"), bare.stderr)
  }
}
