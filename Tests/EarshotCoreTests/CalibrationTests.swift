import XCTest

@testable import EarshotCore

final class CalibrationTests: XCTestCase {
  func testMedianOfTheLoudestWindow() {
    var w = LoudestWindow(seconds: 20)
    // 60 s at 1 Hz: -70 dBm, then -55 (with an outlier) from 20 to 40 s, then -72.
    for s in 0..<60 {
      let rssi: Int8 = (20..<40).contains(s) ? (s == 25 ? -90 : -55) : (s < 20 ? -70 : -72)
      w.add(at: WallTime(micros: Int64(s) * 1_000_000), rssi: rssi)
    }
    w.finish()
    let e = try! XCTUnwrap(w.best)
    XCTAssertEqual(e.median, -55)
    XCTAssertEqual(e.reports, 20)
    XCTAssertEqual(e.from, WallTime(micros: 20_000_000))
    XCTAssertEqual(e.to, WallTime(micros: 39_000_000))
    XCTAssertEqual(w.reports, 60)
  }

  func testAShortRecordingIsOneWindowAndTooFewReportsNone() {
    var w = LoudestWindow(seconds: 20)
    for s in 0..<12 { w.add(at: WallTime(micros: Int64(s) * 1_000_000), rssi: Int8(-60 - s % 2)) }
    XCTAssertNil(w.best)
    w.finish()
    XCTAssertEqual(w.best?.median, -60.5)
    XCTAssertEqual(w.best?.reports, 12)
    var few = LoudestWindow(seconds: 20)
    for s in 0..<9 { few.add(at: WallTime(micros: Int64(s) * 1_000_000), rssi: -60) }
    few.finish()
    XCTAssertNil(few.best)
  }

  func testMemoryStaysBounded() {
    var w = LoudestWindow(seconds: 20)
    // 1,000 reports a second for 25 s: the window keeps at most its capacity.
    for i in 0..<25_000 { w.add(at: WallTime(micros: Int64(i) * 1000), rssi: -60) }
    w.finish()
    XCTAssertEqual(w.best?.reports, LoudestWindow.capacity)
    XCTAssertEqual(w.best?.median, -60)
  }

  func testOffsetsMakeEveryReceiverReadTheReference() {
    let o = Calibration.offsets(
      heard: [("living", -54), ("kitchen", -64.5), ("bedroom", -56.04)], reference: -59)
    XCTAssertEqual(o.map(\.name), ["living", "kitchen", "bedroom"])
    XCTAssertEqual(o.map(\.offset), [-5, 5.5, -3])
  }

  // MARK: ConfigEdit

  func testReplacesTheKeyInItsSectionOnly() {
    let text = """
      # my config
      [scanner]
      rssi_offset = 9 ; not this one (no such key there, but same name)
      [ranging]
      path_loss_exponent = 2.5
      rssi_offset = 3 ; old
      [region "desk"]
      uuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182

      """
    XCTAssertEqual(
      ConfigEdit.setting(text, section: "ranging", key: "rssi_offset", value: "-5"),
      text.replacingOccurrences(of: "rssi_offset = 3 ; old", with: "rssi_offset = -5"))
  }

  func testAddsAfterTheCommentedDefaultOrTheHeader() {
    let documented = "[ranging]\n# dB added\n;rssi_offset = 0\n;stale_after = 5\n"
    XCTAssertEqual(
      ConfigEdit.setting(documented, section: "ranging", key: "rssi_offset", value: "2.5"),
      "[ranging]\n# dB added\n;rssi_offset = 0\nrssi_offset = 2.5\n;stale_after = 5\n")
    XCTAssertEqual(
      ConfigEdit.setting(
        "[ranging]\nstale_after = 5\n", section: "ranging", key: "rssi_offset", value: "1"),
      "[ranging]\nrssi_offset = 1\nstale_after = 5\n")
  }

  func testAddsTheSectionWhenMissing() {
    XCTAssertEqual(
      ConfigEdit.setting(
        "[monitor]\nexit_after = 30", section: "ranging", key: "rssi_offset", value: "-4"),
      "[monitor]\nexit_after = 30\n\n[ranging]\nrssi_offset = -4\n")
    XCTAssertEqual(
      ConfigEdit.setting("", section: "ranging", key: "rssi_offset", value: "-4"),
      "[ranging]\nrssi_offset = -4\n")
  }
}
