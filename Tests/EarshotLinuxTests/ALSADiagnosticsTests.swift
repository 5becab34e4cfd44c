import EarshotTestSupport
import Foundation
import XCTest

/// The shell speaks with one voice: on a machine without the sound card
/// ALSA looks for, `earshot volume` and `earshot alert` print Earshot's
/// error alone, not ALSA's own lines before it.
final class ALSADiagnosticsTests: XCTestCase {
  var directory = ""

  override func setUpWithError() throws { directory = try makeTempDirectory() }

  override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

  /// An ALSA config of our own, in place of alsa.conf and so of the host's
  /// and user's files it would load: `default` is the first card, looked
  /// up the way alsa.conf looks up card 0, by a card id no machine has.
  /// ALSA then reports "cannot find card" and the evaluation errors.
  func noCard() throws -> [String: String] {
    let path = directory + "/alsa.conf"
    try """
    ctl.default {
      type hw
      card { @func card_inum card EarshotNoCard }
    }
    pcm.default {
      type hw
      card { @func card_inum card EarshotNoCard }
    }

    """.write(toFile: path, atomically: true, encoding: .utf8)
    return ["ALSA_CONFIG_PATH": path, "HOME": directory, "EARSHOT_DEBUG": ""]
  }

  func assertOneVoice(
    _ r: Earshot.Result, _ error: String, file: StaticString = #filePath, line: UInt = #line
  ) {
    XCTAssertEqual(r.status, 1, r.stderr, file: file, line: line)
    XCTAssertFalse(r.stderr.contains("ALSA lib"), r.stderr, file: file, line: line)
    XCTAssertTrue(r.stderr.hasPrefix(error), r.stderr, file: file, line: line)
    XCTAssertEqual(
      r.stderr.split(separator: "\n").count, 1, "Earshot's line alone: \(r.stderr)", file: file,
      line: line)
  }

  func testVolumeWithoutACardPrintsEarshotsErrorAlone() throws {
    // --card: straight to ALSA, never through an agent that may be running.
    let r = try Earshot.run(["volume", "--card", "default"], environment: noCard())
    assertOneVoice(r, "earshot volume: cannot open the mixer of card 'default': ")
  }

  func testAlertWithoutACardPrintsEarshotsErrorAlone() throws {
    let r = try Earshot.run(["alert", "--duration", "0.1"], environment: noCard())
    assertOneVoice(r, "earshot alert: cannot open audio device 'default': ")
  }

  /// The lines are kept: EARSHOT_DEBUG shows them under the error.
  func testDebugShowsWhatALSASaidUnderTheError() throws {
    var env = try noCard()
    env["EARSHOT_DEBUG"] = "1"
    let r = try Earshot.run(["volume", "--card", "default"], environment: env)
    XCTAssertEqual(r.status, 1, r.stderr)
    XCTAssertFalse(r.stderr.contains("ALSA lib"), r.stderr)
    let lines = r.stderr.split(separator: "\n")
    XCTAssertTrue(
      lines.first?.hasPrefix("earshot volume: cannot open the mixer") ?? false, r.stderr)
    XCTAssertTrue(
      lines.dropFirst().contains { $0.hasPrefix("  alsa: ") && $0.contains("EarshotNoCard") },
      r.stderr)
    XCTAssertLessThanOrEqual(lines.count, 1 + 8, "at most the last eight are kept")
  }
}
