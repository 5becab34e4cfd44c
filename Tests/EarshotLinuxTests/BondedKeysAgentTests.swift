import EarshotCore
import EarshotLinux
import EarshotTestSupport
import Foundation
import XCTest

/// `earshot run` with a region naming a device follows the keys file
/// (`$EARSHOT_KEYS_FILE`, what earshot-keys.service writes): bonds added
/// and removed while it runs reach it, `earshot devices` lists them from
/// its status, and a missing keys file is a message, not a stop. No
/// adapter is needed: the agent waits for one (hci99) meanwhile.
final class BondedKeysAgentTests: XCTestCase {
  let phone = BondedKey(
    identity: BDAddress("AA:BB:CC:DD:EE:01")!, identityType: .public,
    irk: try! IdentityResolvingKey(hex: "ec0234a357c8ad05341010a60a397d9b"), name: "Pixel 7")
  let watch = BondedKey(
    identity: BDAddress("C1:02:03:04:05:06")!, identityType: .staticRandom, name: "Watch")

  let config = """
    [scanner]
    adapter = hci99
    [region "phone"]
    device = AA:BB:CC:DD:EE:01
    """

  func writeKeys(_ keys: [BondedKey], to path: String) throws {
    try BondedKeysFileIO.write(BondedKeysFile.render(keys, source: "test"), to: path, group: nil)
  }

  func testAgentFollowsTheKeysFileAndDevicesListsFromIt() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let keys = dir + "/bonded-keys"
    try writeKeys([phone], to: keys)
    let agent = try AgentProcess(config: config, environment: ["EARSHOT_KEYS_FILE": keys])
    XCTAssertTrue(
      agent.waitForLog("bonded keys: 1 device(s) from the keys file \(keys), 1 with an IRK"),
      agent.log)
    var listed = try runEarshot(["devices", "--socket", agent.socket])
    XCTAssertEqual(listed.status, 0, listed.err)
    XCTAssertTrue(listed.out.hasPrefix("1 bonded device(s), from the running agent"), listed.out)
    XCTAssertTrue(
      listed.out.contains("AA:BB:CC:DD:EE:01  public  yes  not seen   Pixel 7"), listed.out)

    // A bond added while running (the exporter rewrites the file).
    try writeKeys([phone, watch], to: keys)
    XCTAssertTrue(agent.waitForLog("bonded keys: 2 device(s)"), agent.log)
    listed = try runEarshot(["devices", "--socket", agent.socket, "--format", "json"])
    let lines = listed.out.split(separator: "\n").map(String.init)
    XCTAssertEqual(lines.count, 2, listed.out)
    XCTAssertEqual(
      lines.last,
      #"{"address":"C1:02:03:04:05:06","type":"static","irk":false,"name":"Watch","last_seen":null}"#
    )

    // And removed.
    try writeKeys([watch], to: keys)
    XCTAssertTrue(
      agent.waitForLog("bonded keys: 1 device(s) from the keys file \(keys), 0 with an IRK"),
      agent.log)
    let status = try agent.client().ok(.status)
    XCTAssertEqual(status["devices"]?.array?.count, 1, status.encoded)
    XCTAssertEqual(status["devices"]?.array?.first?["address"], .string("C1:02:03:04:05:06"))
    XCTAssertEqual(agent.stop(), 0, agent.log)
  }

  func testMissingKeysFileIsAMessageAndTheAgentRuns() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let keys = dir + "/run/bonded-keys"
    let agent = try AgentProcess(config: config, environment: ["EARSHOT_KEYS_FILE": keys])
    XCTAssertTrue(
      agent.waitForLog(
        "bonded keys: no keys file at \(keys): run 'sudo systemctl enable --now earshot-keys.service'"
      ),
      agent.log)
    XCTAssertTrue(agent.log.contains("(beacon regions are not affected)"), agent.log)
    _ = try agent.client().ok(.status)
    // The exporter starts later: the directory and file appear, and are picked up.
    mkdir(dir + "/run", 0o755)
    try writeKeys([phone], to: keys)
    XCTAssertTrue(agent.waitForLog("bonded keys: 1 device(s)"), agent.log)
    XCTAssertEqual(agent.logCount("no keys file at"), 1, "reported once: \(agent.log)")
    XCTAssertEqual(agent.stop(), 0, agent.log)
  }

  /// Without an agent, `earshot devices` reads the keys file and says
  /// last seen is unknown.
  func testDevicesWithoutAnAgent() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try writeKeys([phone, watch], to: dir + "/keys")
    let r = try runEarshot([
      "devices", "--keys", dir + "/keys", "--socket", dir + "/no-agent.sock",
    ])
    XCTAssertEqual(r.status, 0, r.err)
    XCTAssertEqual(
      r.out,
      """
      2 bonded device(s), from the keys file \(dir)/keys; last seen unknown (the agent is not running or follows no devices)
      ADDRESS            TYPE    IRK  LAST SEEN  NAME
      AA:BB:CC:DD:EE:01  public  yes  unknown    Pixel 7
      C1:02:03:04:05:06  static  no   unknown    Watch

      """)
    let missing = try runEarshot(["devices", "--keys", dir + "/none"])
    XCTAssertEqual(missing.status, 1)
    XCTAssertTrue(missing.err.contains("earshot-keys.service"), missing.err)
  }
}
