extension Config {
  /// Validates a document and builds the typed config. Every problem is
  /// collected (so one run shows everything to fix) and thrown together as
  /// `ConfigErrors`.
  public static func build(_ doc: ConfigDocument, paths: ConfigPaths = .system) throws -> Config {
    var config = Config(paths: paths)
    var errors = doc.syntaxErrors
    let tables = Dictionary(uniqueKeysWithValues: sections.map { ($0.name, $0) })
    let regionTable = Dictionary(uniqueKeysWithValues: regionKeys.map { ($0.name, $0) })
    func fail(_ line: Int, _ section: String?, _ key: String?, _ message: String) {
      errors.append(
        ConfigError(file: doc.file, line: line, section: section, key: key, message: message))
    }

    // Headers: unknown sections, bad or duplicate region names.
    var regionIndex: [String: Int] = [:]  // raw section text -> index in config.regions
    var seenSingletons: [String: Int] = [:]
    var tagIndex: [String: Int] = [:]  // raw section text -> index in config.tags
    let tagTable = Dictionary(uniqueKeysWithValues: tagKeys.map { ($0.name, $0) })
    var layoutIndex: [String: Int] = [:]  // raw section text -> index in config.layouts
    let layoutTable = Dictionary(uniqueKeysWithValues: layoutKeys.map { ($0.name, $0) })
    /// A `[KIND "NAME"]` header: its name, given once per kind.
    func declare<Element>(
      _ h: SectionHeader, _ name: NameResult, kind: String,
      _ list: WritableKeyPath<Config, [Element]>,
      _ index: inout [String: Int], line: (Element) -> Int, make: (String, Int) -> Element
    ) {
      switch name {
      case .failure(let message):
        fail(h.line, h.name, nil, message)
      case .success(let n):
        if let first = index[h.name] {
          fail(
            h.line, h.name, nil,
            "duplicate \(kind) name '\(n)' (first defined on line \(line(config[keyPath: list][first]))); give each \(kind) its own name"
          )
        } else {
          index[h.name] = config[keyPath: list].count
          config[keyPath: list].append(make(n, h.line))
        }
      }
    }
    for h in doc.headers {
      if let name = regionName(h.name) {
        declare(h, name, kind: "region", \.regions, &regionIndex, line: \.line) {
          RegionConfig(name: $0, line: $1)
        }
      } else if let name = tagName(h.name) {
        declare(h, name, kind: "tag", \.tags, &tagIndex, line: \.line) {
          TagConfig(name: $0, line: $1)
        }
      } else if let name = layoutName(h.name) {
        // A layout's name is a kind's, read in any case (`beacon = ACME:…`).
        if case .success(let n) = name,
          let other = config.layouts.first(where: {
            $0.name != n && $0.name.lowercased() == n.lowercased()
          })
        {
          fail(
            h.line, h.name, nil,
            "layout '\(n)' differs from '\(other.name)' (line \(other.line)) only in case; "
              + "a format is named in any case, give each its own name")
          continue
        }
        declare(h, name, kind: "layout", \.layouts, &layoutIndex, line: \.line) {
          LayoutConfig(name: $0, line: $1)
        }
      } else if tables[h.name] != nil {
        if let first = seenSingletons[h.name] {
          fail(
            h.line, h.name, nil,
            "section appears twice (first on line \(first)); merge the two")
        } else {
          seenSingletons[h.name] = h.line
        }
      } else {
        fail(
          h.line, h.name, nil,
          "unknown section; known sections: \(sections.map(\.name).joined(separator: ", ")), region \"NAME\", tag \"NAME\", layout \"NAME\""
        )
      }
    }

    // Entries.
    var seenKeys: [String: Int] = [:]  // "section\0key" -> line
    var lastKey: String? = nil
    for e in doc.entries {
      defer { lastKey = e.key }
      if e.section.isEmpty {
        fail(e.line, nil, e.key, "key outside any section; put it under a [section] header")
        continue
      }
      let id = e.section + "\u{0}" + e.key
      if let first = seenKeys[id] {
        if e.continuation, lastKey == e.key {
          fail(
            e.line, e.section, e.key,
            "this line starts with whitespace, so it continues the value of '\(e.key)'; values are one line: remove the indentation"
          )
        } else {
          fail(e.line, e.section, e.key, "set twice (first on line \(first)); keep one")
        }
        continue
      }
      seenKeys[id] = e.line
      do {
        /// A key of a `[KIND "NAME"]` section, from that kind's key table.
        func set<Element>(
          _ element: inout Element, kind: String, _ keys: [ConfigKey<Element>],
          _ table: [String: ConfigKey<Element>]
        ) throws {
          guard let key = table[e.key] else {
            return fail(
              e.line, e.section, e.key,
              "unknown key; \(kind) keys: \(keys.map(\.name).joined(separator: ", "))")
          }
          try key.set(&element, e.value)
        }
        if let index = regionIndex[e.section] {
          try set(&config.regions[index], kind: "region", regionKeys, regionTable)
        } else if let index = tagIndex[e.section] {
          try set(&config.tags[index], kind: "tag", tagKeys, tagTable)
        } else if let index = layoutIndex[e.section] {
          try set(&config.layouts[index], kind: "layout", layoutKeys, layoutTable)
        } else if let table = tables[e.section] {
          guard try table.set(&config, e.key, e.value) else {
            fail(
              e.line, e.section, e.key,
              "unknown key; [\(table.name)] keys: \(table.keys.map(\.name).joined(separator: ", "))"
            )
            continue
          }
        }
        // Entries of unknown or malformed sections were reported with the header.
      } catch let v as ConfigValueError {
        fail(e.line, e.section, e.key, v.message)
      }
    }

    // Whole-region rules. The layouts first: a region may name their kinds.
    _ = config.trackedLayouts
    for (raw, index) in regionIndex.sorted(by: { $0.value < $1.value }) {
      var r = config.regions[index]
      // The beacon-format keys given, in the file's order.
      let formats = ["uuid", "altbeacon", "eddystone", "beacon"]
        .compactMap { key in seenKeys[raw + "\u{0}" + key].map { (key, $0) } }
        .sorted { $0.1 < $1.1 }.map(\.0)
      if formats.count > 1 {
        fail(
          seenKeys[raw + "\u{0}" + formats[1]] ?? r.line, raw, formats[1],
          "a region names one beacon format; \(formats.joined(separator: " and ")) are both set")
      }
      if formats.first.map({ $0 != "uuid" }) ?? false {
        for key in ["major", "minor"] where seenKeys[raw + "\u{0}" + key] != nil {
          fail(
            seenKeys[raw + "\u{0}" + key] ?? r.line, raw, key,
            "\(key) is for iBeacons; write an AltBeacon's ID2 and ID3 in altbeacon = ID1:ID2:ID3")
        }
      }
      if let written = r.beaconWritten {
        let line = seenKeys[raw + "\u{0}beacon"] ?? r.line
        let named = written.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        if let layout = config.layouts.last(where: { $0.name.lowercased() == named.lowercased() })?
          .layout, let why = layout.trackingProblem
        {
          fail(line, raw, "beacon", "the layout '\(layout.name)' cannot be tracked: \(why)")
        } else {
          do {
            r.beaconMatch = try TrackedMatch.parse(written)
          } catch let v as ConfigValueError {
            fail(line, raw, "beacon", v.message)
          }
        }
      }
      if r.uuid == nil, formats.isEmpty, !r.watchesDevices,
        seenKeys[raw + "\u{0}device"] == nil, seenKeys[raw + "\u{0}irk"] == nil,
        r.tags.isEmpty, seenKeys[raw + "\u{0}tag"] == nil
      {
        fail(
          r.line, raw, "uuid",
          "a region needs a uuid (iBeacons), an altbeacon, an eddystone, a beacon (any format), a device (bonded devices), an irk or a tag"
        )
      }
      let tagNames = Set(config.tags.map(\.name))
      for name in r.tags where !tagNames.contains(name) {
        let known = config.tags.map(\.name)
        fail(
          seenKeys[raw + "\u{0}tag"] ?? r.line, raw, "tag",
          "no [tag \"\(name)\"] section (tags: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"
        )
      }
      if r.minor != nil, r.major == nil {
        fail(
          seenKeys[raw + "\u{0}minor"] ?? r.line, raw, "minor",
          "minor without major; set major too (a minor alone matches beacons of every major)")
      }
      if r.exitAfter == nil { r.exitAfter = config.monitor.exitAfter }
      config.regions[index] = r
    }
    for (raw, index) in tagIndex.sorted(by: { $0.value < $1.value })
    where config.tags[index].address == nil && seenKeys[raw + "\u{0}address"] == nil {
      fail(config.tags[index].line, raw, "address", "a tag needs an address")
    }
    for (raw, index) in layoutIndex.sorted(by: { $0.value < $1.value })
    where config.layouts[index].layout == nil && seenKeys[raw + "\u{0}layout"] == nil {
      fail(
        config.layouts[index].line, raw, "layout",
        "a layout section needs a layout string, e.g. layout = m:2-3=0a0b,i:4-9,p:10-10")
    }
    if config.trackers.mqtt, !config.trackers.enabled || !config.mqtt.enabled {
      fail(
        seenKeys["trackers\u{0}mqtt"] ?? 0, "trackers", "mqtt",
        "mqtt = true needs [trackers] enabled = true and an [mqtt] host to publish to")
    }
    if config.monitor.autoFloor > config.monitor.autoCeiling {
      fail(
        seenKeys["monitor\u{0}auto_floor"] ?? 0, "monitor", "auto_floor",
        "auto_floor is above auto_ceiling")
    }

    if !errors.isEmpty {
      throw ConfigErrors(errors.sorted { ($0.line, $0.key ?? "") < ($1.line, $1.key ?? "") })
    }
    return config
  }

  enum NameResult {
    case success(String)
    case failure(String)
  }

  /// `tag "keys"` -> "keys"; `nil` if the header is not a tag at all.
  static func tagName(_ header: String) -> NameResult? {
    guard header == "tag" || header.hasPrefix("tag ") || header.hasPrefix("tag\"") else {
      return nil
    }
    let rest = ConfigValue.trim(header.dropFirst("tag".count))
    guard rest.count >= 2, rest.first == "\"", rest.last == "\"" else {
      return .failure("a tag header is [tag \"NAME\"] with the name in double quotes")
    }
    let name = String(rest.dropFirst().dropLast())
    guard !name.isEmpty, name.utf8.count <= 64 else {
      return .failure("a tag name is 1 to 64 bytes")
    }
    for s in name.unicodeScalars
    where s.value <= 0x20 || s == "\"" || s == "\\" || s == "/" || s.value == 0x7F {
      return .failure(
        "a tag name cannot hold spaces, quotes, slashes, backslashes or control characters (it is a command argument and an MQTT topic level)"
      )
    }
    return .success(name)
  }

  /// `region "desk"` -> "desk"; `nil` if the header is not a region at all.
  static func regionName(_ header: String) -> NameResult? {
    guard header == "region" || header.hasPrefix("region ") || header.hasPrefix("region\"") else {
      return nil
    }
    let rest = ConfigValue.trim(header.dropFirst("region".count))
    guard rest.count >= 2, rest.first == "\"", rest.last == "\"" else {
      return .failure("a region header is [region \"NAME\"] with the name in double quotes")
    }
    let name = String(rest.dropFirst().dropLast())
    guard !name.isEmpty else { return .failure("the region name is empty") }
    for s in name.unicodeScalars where s.value < 0x20 || s == "\"" || s == "\\" || s.value == 0x7F {
      return .failure("a region name cannot hold quotes, backslashes or control characters")
    }
    return .success(name)
  }

  /// The effective settings as an INI file, defaults filled in: what
  /// `earshot check-config` prints.
  public func render() -> String {
    var out = ""
    for table in Config.sections {
      out += "[\(table.name)]\n"
      for (k, v) in table.render(self) { out += "\(k) = \(v)\n" }
      out += "\n"
    }
    for r in regions {
      out += "[region \"\(r.name)\"]\n"
      for k in Config.regionKeys {
        let v = k.show(r)
        if v.isEmpty { continue }  // unset: major/minor match any, no hook
        out += "\(k.name) = \(v)\n"
      }
      out += "\n"
    }
    for t in tags {
      out += "[tag \"\(t.name)\"]\n"
      for k in Config.tagKeys {
        let v = k.show(t)
        if v.isEmpty { continue }
        out += "\(k.name) = \(v)\n"
      }
      out += "\n"
    }
    for l in layouts {
      out += "[layout \"\(l.name)\"]\n"
      for k in Config.layoutKeys { out += "\(k.name) = \(k.show(l))\n" }
      out += "\n"
    }
    return out
  }
}
