import EarshotCore
import EarshotLinux
import Foundation
import XCTest

/// The power source read from a directory laid out as the kernel lays out
/// /sys/class/power_supply (a charger, a battery, a mouse's battery),
/// unplugged and back.
final class PowerSupplyReaderTests: XCTestCase {
  func testFollowsTheChargerAtMostEveryRefresh() throws {
    let root = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: root) }
    func write(_ path: String, _ text: String) throws {
      let dir = (root + "/" + path as NSString).deletingLastPathComponent
      try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
      try text.write(toFile: root + "/" + path, atomically: true, encoding: .utf8)
    }
    try write("AC/type", "Mains\n")
    try write("AC/online", "1\n")
    try write("BAT0/type", "Battery\n")
    try write("BAT0/status", "Charging\n")
    try write("hidpp_battery_0/type", "Battery\n")
    try write("hidpp_battery_0/scope", "Device\n")
    try write("hidpp_battery_0/status", "Discharging\n")
    let reader = PowerSupplyReader(root: root, refreshSeconds: 30)
    let t0 = MonotonicTime(nanos: 1_000_000_000)
    XCTAssertEqual(reader.current(now: t0), .mains, "the mouse's battery says nothing")
    try write("AC/online", "0\n")
    try write("BAT0/status", "Discharging\n")
    XCTAssertEqual(reader.current(now: t0 + .seconds(29)), .mains, "cached for 30 s")
    XCTAssertEqual(reader.current(now: t0 + .seconds(30)), .battery)
    XCTAssertEqual(PowerSupplyReader(root: root + "/missing").current(), .mains, "no sysfs: mains")
  }
}
