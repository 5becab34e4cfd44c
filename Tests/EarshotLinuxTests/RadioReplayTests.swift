import EarshotCore
import EarshotTestSupport
import Foundation
import XCTest

/// `earshot simulate radio --write` and `earshot monitor --radio`: a replay
/// heard through the simulated radio, checked independently against the air.
final class RadioReplayTests: XCTestCase {
  var directory = ""

  override func setUpWithError() throws { directory = try makeTempDirectory() }
  override func tearDownWithError() throws {
    try? FileManager.default.removeItem(atPath: directory)
  }

  func read(_ name: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)")))
  }

  func testAReplayOfTheAirThroughTheRadioIsWhatItsScheduleHears() throws {
    let sim = "\(directory)/sim"
    let r = try runEarshot([
      "simulate", "radio", "--hours", "0.3", "--seed", "2", "--format", "json", "--write", sim,
    ])
    XCTAssertEqual(r.status, 0, r.err)
    // The simulation's own run: its air filtered by its schedule.
    let (simSpans, simReports) = try RadioCaptureCheck.readScan(try read("sim/scan.btsnoop"))
    let air = try read("sim/air.pcap")
    let (simHeard, pdus) = try RadioCaptureCheck.filter(air: air, by: simSpans)
    XCTAssertGreaterThan(simReports.count, 500)
    XCTAssertGreaterThan(simSpans.count, 5)
    XCTAssertEqual(simHeard, simReports)
    XCTAssertLessThan(simReports.count, pdus / 4, "the air at 30 % loss, sampled on battery")

    // The same air replayed into `earshot monitor` through the radio.
    let config = "\(directory)/earshot.conf"
    try """
    [region "house"]
    uuid = 5D1F6A7B-8C9D-4E0F-A1B2-C3D4E5F60718
    exit_after = auto
    """.write(toFile: config, atomically: true, encoding: .utf8)
    let run = "\(directory)/run.btsnoop"
    let m = try runEarshot([
      "monitor", "--config", config, "--input", "\(sim)/air.pcap", "--radio", "battery",
      "--radio-write", run, "--no-range", "--no-hooks",
    ])
    XCTAssertEqual(m.status, 0, m.err)
    XCTAssertTrue(m.out.contains("\"region\":\"house\",\"state\":\"inside\""), m.out)
    let (spans, reports) = try RadioCaptureCheck.readScan(try read("run.btsnoop"))
    let (heard, _) = try RadioCaptureCheck.filter(air: air, by: spans)
    XCTAssertEqual(heard, reports, "the air filtered by the replay's schedule")
    XCTAssertTrue(spans.contains { $0.window < $0.interval }, "the duty fell")
    XCTAssertTrue(m.err.contains("simulated radio heard \(reports.count) of \(pdus)"), m.err)
    XCTAssertLessThan(reports.count, pdus / 3)

    // Errors say what to do.
    let bad = try runEarshot([
      "monitor", "--config", config, "--input", "\(sim)/air.pcap", "--radio", "solar",
    ])
    XCTAssertEqual(bad.status, 2)
    XCTAssertTrue(bad.err.contains("--radio expects battery or mains"), bad.err)
    let noInput = try runEarshot(["monitor", "--config", config, "--radio", "battery"])
    XCTAssertTrue(noInput.err.contains("--radio needs --input CAPTURE"), noInput.err)
    let paced = try runEarshot([
      "monitor", "--config", config, "--input", "\(sim)/air.pcap", "--radio", "battery",
      "--pace", "10",
    ])
    XCTAssertEqual(paced.status, 2)
    XCTAssertTrue(paced.err.contains("leave out --pace"), paced.err)
  }
}
