import EarshotTestSupport
import Foundation
import XCTest

/// The shipped systemd units pass `systemd-analyze verify` once installed
/// with the binary where they point.
final class ServiceUnitTests: XCTestCase {
  func testUnitsInstallAndVerify() throws {
    guard let analyze = Earshot.tool("systemd-analyze") else {
      try requireResource("systemd-analyze (package systemd)")
    }
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent()
      .deletingLastPathComponent()
    let root = NSTemporaryDirectory() + "earshot-install-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: root) }
    // Install into a staging root with the binary the tests built.
    let staged = root + "/build/.build/release"
    try FileManager.default.createDirectory(atPath: staged, withIntermediateDirectories: true)
    try FileManager.default.copyItem(atPath: Earshot.binary, toPath: staged + "/earshot")
    for item in ["scripts", "etc", "sounds", "README.md", "docs"]
    where FileManager.default.fileExists(atPath: repo.appendingPathComponent(item).path) {
      try FileManager.default.copyItem(
        atPath: repo.appendingPathComponent(item).path, toPath: root + "/build/" + item)
    }
    let install = try Earshot.run(
      ["-c", "cd \(root)/build && DESTDIR=\(root)/dest scripts/install.sh /usr/local"],
      executable: "/bin/bash")
    XCTAssertEqual(install.status, 0, install.stderr)
    let binary = root + "/dest/usr/local/bin/earshot"
    XCTAssertTrue(FileManager.default.isExecutableFile(atPath: binary))
    // The README's links to docs/ hold where it is installed.
    for doc in ["README.md", "docs/configuration.md", "docs/link-protocol.md"] {
      XCTAssertTrue(
        FileManager.default.fileExists(atPath: root + "/dest/usr/local/share/doc/earshot/" + doc),
        doc)
    }
    for unit in [
      "etc/systemd/system/earshot.service", "etc/systemd/user/earshot.service",
      "etc/systemd/system/earshot-keys.service",
    ] {
      let path = root + "/dest/" + unit
      // Point ExecStart at the staged binary so verify can check it exists.
      let text = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(
        of: "/usr/local/bin/earshot", with: binary)
      // Under its own name (earshot-keys.service orders itself before earshot.service).
      let name = unit.hasSuffix("earshot-keys.service") ? "earshot-keys.service" : "earshot.service"
      let check = root + "/" + name
      try text.write(toFile: check, atomically: true, encoding: .utf8)
      let r = try Earshot.run(["verify", check], executable: analyze)
      XCTAssertEqual(r.status, 0, r.stderr)
      // Warnings about the host's own units are not ours: only lines naming our file count.
      let ours = (r.stdout + r.stderr).split(separator: "\n").filter {
        $0.contains(name)
      }
      XCTAssertTrue(ours.isEmpty, "\(unit):\n\(ours.joined(separator: "\n"))")
      XCTAssertTrue(text.contains("ProtectSystem=strict"))
      if !unit.hasSuffix("earshot-keys.service") {
        XCTAssertTrue(text.contains("StateDirectory=earshot"))
      }
    }
    let system = try String(
      contentsOfFile: root + "/dest/etc/systemd/system/earshot.service", encoding: .utf8)
    XCTAssertTrue(system.contains("AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN"))
    XCTAssertTrue(system.contains("Wants=network-online.target earshot-keys.service"))
    // The keys exporter: root, but only CAP_CHOWN, no network, and the
    // keys file where the agent looks for it.
    let keys = try String(
      contentsOfFile: root + "/dest/etc/systemd/system/earshot-keys.service", encoding: .utf8)
    XCTAssertTrue(keys.contains("CapabilityBoundingSet=CAP_CHOWN\n"))
    XCTAssertTrue(keys.contains("PrivateNetwork=yes"))
    XCTAssertTrue(
      keys.contains("--follow --output /run/earshot-keys/bonded-keys --group bluetooth"))
  }
}
