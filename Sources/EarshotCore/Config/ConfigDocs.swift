extension Config {
  /// The configuration table of docs/configuration.md, made from the key
  /// tables so that the documentation cannot drift from them (ConfigFileTests
  /// holds the page to exactly this text). Defaults are the system service's.
  public static func markdownTable() -> String {
    var out = "| section | key | default | meaning |\n|---|---|---|---|\n"
    func row(_ section: String, _ key: String, _ value: String, _ help: String) {
      let shown = value.isEmpty ? "(empty)" : "`\(value)`"
      out += "| \(section) | \(key) | \(shown) | \(markdownEscaped(help)) |\n"
    }
    for table in sections {
      for key in table.keys { row(table.name, key.name, key.defaultValue, key.help) }
    }
    let region = RegionConfig(name: "NAME", line: 0)
    for key in regionKeys { row("region \"NAME\"", key.name, key.show(region), key.help) }
    let tag = TagConfig(name: "NAME", line: 0)
    for key in tagKeys { row("tag \"NAME\"", key.name, key.show(tag), key.help) }
    let layout = LayoutConfig(name: "NAME", line: 0)
    for key in layoutKeys { row("layout \"NAME\"", key.name, key.show(layout), key.help) }
    return out
  }

  /// Help text as a table cell: `|` would end the cell, `<` start HTML.
  static func markdownEscaped(_ text: String) -> String {
    var out = ""
    for c in text {
      if c == "|" || c == "<" || c == ">" || c == "*" { out.append("\\") }
      out.append(c)
    }
    return out
  }
}
