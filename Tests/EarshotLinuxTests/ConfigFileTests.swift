import EarshotTestSupport
import Foundation
import XCTest

@testable import EarshotCore
@testable import EarshotLinux

final class ConfigFileTests: XCTestCase {
  let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  func errors(_ text: String) -> [ConfigError] {
    do {
      _ = try Config.build(IniReader.parse(text, file: "t.conf"))
      return []
    } catch let e as ConfigErrors {
      return e.errors
    } catch {
      XCTFail("\(error)")
      return []
    }
  }

  /// etc/earshot.conf as shipped sets nothing: every key commented out with
  /// its default, every region an example commented out (a fresh install
  /// monitors nothing). It lists each section and key of the key tables,
  /// with the right default, and nothing they lack.
  func testShippedExampleSetsNothingAndDocumentsEveryKey() throws {
    let path = repo.appendingPathComponent("etc/earshot.conf").path
    let fix =
      "; fix etc/earshot.conf: each key of Config.sections commented out as ';key = DEFAULT'"
    let config = try Config.load(path: path, paths: .system)
    XCTAssertEqual(config.regions.map(\.name), [], "the shipped file must monitor nothing")
    XCTAssertEqual(
      config.render(), Config(paths: .system).render(), "the shipped file sets nothing")

    let text = try String(contentsOfFile: path, encoding: .utf8)
    let tables = Dictionary(uniqueKeysWithValues: Config.sections.map { ($0.name, $0) })
    var section: String? = nil
    var sectionsSeen: [String] = []
    var keysSeen: [String: String] = [:]  // "section key" -> default written
    var regionKeysSeen: Set<String> = []
    var tagKeysSeen: Set<String> = []
    var layoutKeysSeen: Set<String> = []
    for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let line = String(raw)
      let at = "etc/earshot.conf:\(n + 1): "
      if line.hasPrefix("[") {
        let name = String(line.dropFirst().prefix { $0 != "]" })
        XCTAssertNotNil(tables[name], at + "[\(name)] is not in the key tables" + fix)
        XCTAssertFalse(sectionsSeen.contains(name), at + "[\(name)] twice")
        sectionsSeen.append(name)
        section = name
      } else if line.hasPrefix(";[region \"") {
        section = "region"
      } else if line.hasPrefix(";[tag \"") {
        section = "tag"
      } else if line.hasPrefix(";[layout \"") {
        section = "layout"
      } else if line.hasPrefix(";"), let eq = line.firstIndex(of: "=") {
        let key = String(line.dropFirst()[..<eq]).trimmingCharacters(in: .whitespaces)
        let value = String(line[line.index(after: eq)...]).trimmingCharacters(in: .whitespaces)
        guard let section else {
          XCTFail(at + "key outside a section")
          continue
        }
        if section == "layout" {
          XCTAssertTrue(
            Config.layoutKeys.contains { $0.name == key }, at + "no layout key \(key)")
          layoutKeysSeen.insert(key)
        } else if section == "tag" {
          XCTAssertTrue(Config.tagKeys.contains { $0.name == key }, at + "no tag key \(key)")
          tagKeysSeen.insert(key)
        } else if section == "region" {
          XCTAssertTrue(Config.regionKeys.contains { $0.name == key }, at + "no region key \(key)")
          regionKeysSeen.insert(key)
        } else if let table = tables[section] {
          guard let documented = table.keys.first(where: { $0.name == key }) else {
            XCTFail(at + "[\(section)] has no key '\(key)'" + fix)
            continue
          }
          XCTAssertEqual(value, documented.defaultValue, at + "[\(section)] \(key)'s default" + fix)
          XCTAssertNil(keysSeen["\(section) \(key)"], at + "[\(section)] \(key) twice")
          keysSeen["\(section) \(key)"] = value
        }
      } else if let first = line.first, first != "#", first != ";" {
        XCTFail(at + "'\(line)' is set: keep the example's keys commented out")
      }
    }
    XCTAssertEqual(
      sectionsSeen, Config.sections.map(\.name), "sections in check-config's order" + fix)
    for table in Config.sections {
      for key in table.keys {
        XCTAssertNotNil(
          keysSeen["\(table.name) \(key.name)"], "[\(table.name)] \(key.name) missing" + fix)
      }
    }
    XCTAssertEqual(regionKeysSeen, Set(Config.regionKeys.map(\.name)), "the region example's keys")
    XCTAssertEqual(tagKeysSeen, Set(Config.tagKeys.map(\.name)), "the tag example's keys")
    XCTAssertEqual(
      layoutKeysSeen, Set(Config.layoutKeys.map(\.name)), "the layout example's keys")

    // The examples, uncommented, are valid: the regions load and every
    // section keeps its defaults.
    let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map {
      $0.hasPrefix(";") ? String($0.dropFirst()) : String($0)
    }.joined(separator: "\n")
    let example = try Config.build(
      IniReader.parse(uncommented, file: "uncommented"), paths: .system)
    XCTAssertEqual(
      example.regions.map(\.name), ["desk", "lab", "shelf", "hall", "crate", "alice"])
    XCTAssertEqual(example.regions[2].format, .altBeacon)
    XCTAssertEqual(example.regions[3].format, .eddystoneUID)
    XCTAssertEqual(example.regions[4].beacons?.description, "acme:010203040506")
    XCTAssertEqual(example.regions[5].devices.count, 2)
    XCTAssertEqual(example.regions[5].irks.count, 1)
    XCTAssertEqual(example.regions[0].minor, 10)
    XCTAssertEqual(example.regions[0].onEnter, ["/usr/local/bin/lights", "on"])
    XCTAssertEqual(example.regions[1].exitAfter, .auto)
    var defaults = Config(paths: .system)
    defaults.regions = example.regions
    XCTAssertEqual(example.tags.map(\.name), ["keys"])
    defaults.tags = example.tags
    XCTAssertEqual(example.layouts.map(\.name), ["acme"])
    XCTAssertEqual(example.beaconClassifier.layouts.last?.name, "acme")
    defaults.layouts = example.layouts
    XCTAssertEqual(example.render(), defaults.render())
    // The effective settings read back to the same config.
    let again = try Config.build(IniReader.parse(example.render(), file: "render"))
    func unlined(_ r: [RegionConfig]) -> [RegionConfig] {
      r.map {
        var x = $0
        x.line = 0
        return x
      }
    }
    XCTAssertEqual(unlined(again.regions), unlined(example.regions))
    XCTAssertEqual(again.audio, example.audio)
    XCTAssertEqual(again.link, example.link)
  }

  /// docs/configuration.md's table is Config.markdownTable(), between its
  /// two markers (scripts/docs.sh writes it).
  func testConfigurationPageTableIsTheKeyTable() throws {
    let path = repo.appendingPathComponent("docs/configuration.md").path
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let begin =
      "<!-- generated from the key tables by Config.markdownTable(); ConfigFileTests checks it -->\n"
    let end = "<!-- end of the generated table -->"
    guard let b = text.range(of: begin),
      let e = text.range(of: end, range: b.upperBound..<text.endIndex)
    else {
      return XCTFail(
        "docs/configuration.md lacks the markers around the configuration table: \(begin)...\(end)")
    }
    let table = Config.markdownTable()
    XCTAssertEqual(
      String(text[b.upperBound..<e.lowerBound]), table,
      "docs/configuration.md's configuration table differs from the key tables; regenerate it with "
        + "scripts/docs.sh (after swift build)")
  }

  /// A config without regions is valid, but check-config says plainly that
  /// nothing is monitored and how to change that.
  func testCheckConfigSaysWhenNothingIsMonitored() throws {
    let shipped = repo.appendingPathComponent("etc/earshot.conf").path
    let none = try runEarshot(["check-config", "--config", shipped])
    XCTAssertEqual(none.status, 0, none.err)
    XCTAssertTrue(none.out.contains("OK, 0 region(s)"), none.out)
    XCTAssertTrue(
      none.out.contains("# no [region \"NAME\"] sections: nothing is monitored; add one"), none.out)
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try "[region \"desk\"]\nuuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182\n".write(
      toFile: dir + "/one.conf", atomically: true, encoding: .utf8)
    let one = try runEarshot(["check-config", "--config", dir + "/one.conf"])
    XCTAssertTrue(one.out.contains("OK, 1 region(s)"), one.out)
    XCTAssertFalse(one.out.contains("nothing is monitored"), one.out)
  }

  func testLineNumbersStayExactAcrossCommentsBlanksAndLongLines() {
    let long = "; " + String(repeating: "x", count: 300)
    let text = """
      # comment
      ; another

      [scanner]
      \(long)
      adapter = hci0
      mode = sideways
      [ranging]
      path_loss_exponent = 2,5
      """
    let e = errors(text)
    XCTAssertEqual(e.map(\.line), [5, 7, 9])
    XCTAssertEqual(e[1].key, "mode")
    XCTAssertTrue(e[1].description.hasPrefix("t.conf:7: [scanner] mode: expected one of legacy"))
    XCTAssertTrue(e[0].message.contains("longer than"))
    XCTAssertEqual(e[2].key, "path_loss_exponent")
  }

  func testRegionRules() {
    let u = "8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182"
    let e = errors(
      """
      [region "a"]
      uuid = \(u)
      minor = 1
      [region "b"]
      uuid = 8F2C1A3E5B7D4E90A1C23D4E5F60718
      [region "a"]
      uuid = \(u)
      [region "c"]
      major = 70000
      exit_after = soon
      on_enter = /bin/echo 'oops
      [region c]
      uuid = \(u)
      [region "d"]
      uuid = \(u)
      hook_timeout = -1
      colour = red
      """)
    let byLine = Dictionary(grouping: e, by: \.line).mapValues { $0.map(\.message).joined() }
    XCTAssertTrue(byLine[3]!.contains("minor without major"))
    XCTAssertTrue(byLine[5]!.contains("not a UUID"))
    XCTAssertTrue(byLine[6]!.contains("duplicate region name 'a'"))
    XCTAssertTrue(byLine[8]!.contains("needs a uuid"))
    XCTAssertTrue(byLine[9]!.contains("out of range"))
    XCTAssertTrue(byLine[10]!.contains("'auto'"))
    XCTAssertTrue(byLine[11]!.contains("unterminated single quote"))
    XCTAssertTrue(byLine[12]!.contains("double quotes"))
    XCTAssertTrue(byLine[16]!.contains("out of range"))
    XCTAssertTrue(byLine[17]!.contains("unknown key"))
  }

  func testValuesAndDefaults() throws {
    let c = try Config.build(
      IniReader.parse(
        """
        [scanner]
        passive = no
        mode = extended
        [monitor]
        exit_after = 45
        [audio]
        fallback = plughw:0,0  hw:1,0
        [region "desk"]
        uuid = 8f2c1a3e-5b7d-4e90-a1c2-3d4e5f607182
        major = 1
        on_exit = /usr/local/bin/lights "off now" ; trailing comment
        """, file: "t.conf"),
      paths: .user(runtimeDir: "/run/user/1000", stateHome: "/home/u/.local/state"))
    XCTAssertFalse(c.scanner.passive, "passive is the default; no turns it off")
    XCTAssertEqual(c.scanner.mode, .extended)
    XCTAssertEqual(c.audio.fallback, ["plughw:0,0", "hw:1,0"])
    XCTAssertEqual(c.regions[0].exitAfter, .seconds(45), "the [monitor] default")
    XCTAssertEqual(c.regions[0].onExit, ["/usr/local/bin/lights", "off now"])
    XCTAssertEqual(c.control.socket, "/run/user/1000/earshot.sock")
    XCTAssertEqual(c.state.path, "/home/u/.local/state/earshot/state")
    XCTAssertEqual(c.findPhone.volume, 0.9)
    XCTAssertEqual(c.findPhone.headphoneVolume, 0.3)
    XCTAssertEqual(c.findPhone.timeout, 60)
  }

  /// Every section goes through one parser set and one located error: a bad
  /// value anywhere says file, line, section and key, then what to write.
  func testEverySectionsErrorsNameFileLineSectionAndKey() {
    let e = errors(
      """
      [shutter]
      warmup_frames = lots
      timeout = 0
      resolution = big
      [media]
      player = my player
      library =
      [link]
      enabled = maybe
      security = none
      name = \(String(repeating: "x", count: 21))
      alow = bonded
      [mqtt]
      tls = perhaps
      """)
    XCTAssertEqual(
      e.map(\.description),
      [
        "t.conf:2: [shutter] warmup_frames: expected a whole number from 0 to 100, got 'lots'",
        "t.conf:3: [shutter] timeout: 0 is out of range; expected seconds above 0, at most 600",
        "t.conf:4: [shutter] resolution: expected WIDTHxHEIGHT like 1280x720 (16 to 16384 each), or empty, got 'big'",
        "t.conf:6: [media] player: expected an MPRIS bus name like org.mpris.MediaPlayer2.vlc (or just vlc), got 'my player'",
        "t.conf:7: [media] library: must not be empty; e.g. ~/Music",
        "t.conf:9: [link] enabled: expected true or false, got 'maybe'",
        "t.conf:10: [link] security: expected one of authenticated, encrypted, got 'none'",
        "t.conf:11: [link] name: expected a name of at most 20 bytes of UTF-8 (it must fit the advertisement), got '\(String(repeating: "x", count: 21))'",
        "t.conf:12: [link] alow: unknown key; [link] keys: enabled, allow, security, legacy_remote_volume, name, adapter",
        "t.conf:14: [mqtt] tls: expected true or false, got 'perhaps'",
      ])
  }

  /// Tests never read the host's or the user's config: a config with a
  /// region at the default location (ConfigLocation.defaultPath(), reached
  /// through $EARSHOT_CONFIG without writing to /etc) does not reach the
  /// test helpers' agents and commands.
  func testTestHelpersNeverReadTheHostsConfig() throws {
    let dir = try makeTempDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let region = "[region \"leak\"]\nuuid = 8F2C1A3E-5B7D-4E90-A1C2-3D4E5F607182\n"
    try FileManager.default.createDirectory(
      atPath: dir + "/xdg/earshot", withIntermediateDirectories: true)
    try region.write(toFile: dir + "/xdg/earshot/earshot.conf", atomically: true, encoding: .utf8)
    try region.write(toFile: dir + "/host.conf", atomically: true, encoding: .utf8)
    let host = ["EARSHOT_CONFIG": dir + "/host.conf", "XDG_CONFIG_HOME": dir + "/xdg"]

    // The leak is real: a command without --config reads the default path.
    let leaked = try runEarshot(["check-config"], environment: host)
    XCTAssertTrue(
      leaked.out.hasPrefix("# \(dir)/host.conf: OK, 1 region(s)"), leaked.out + leaked.err)
    // The helpers' commands read an empty config instead of /etc's.
    let plain = try runEarshot(["check-config"])
    XCTAssertTrue(plain.out.hasPrefix("# /dev/null: OK, 0 region(s)"), plain.out + plain.err)
    // And their agents take an explicit config: no region comes in.
    let agent = try AgentProcess(environment: host)
    let status = try runEarshot(["status", "--socket", agent.socket])
    XCTAssertEqual(status.status, 0, status.err)
    let parsed = try JSONParser.parse(status.out.trimmingCharacters(in: .newlines))
    XCTAssertEqual(parsed["regions"], .array([]))
    XCTAssertEqual(agent.stop(), 0)
  }
}
