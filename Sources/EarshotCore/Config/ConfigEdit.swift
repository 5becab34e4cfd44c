/// Sets one key in a config file's text, leaving every other line (and
/// comment) as it was: the key's line in the section if there is one; else
/// a new line after the key's commented-out default (`;key = ...`, as in
/// etc/earshot.conf) or after the section header; else a new section at
/// the end. Pure; the caller reads, checks and writes the file.
public enum ConfigEdit {
  public static func setting(_ text: String, section: String, key: String, value: String) -> String
  {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let hadNewline = text.hasSuffix("\n")
    if hadNewline || text.isEmpty { lines.removeLast() }
    let line = "\(key) = \(value)"
    var inSection = false
    var header: Int?
    var commented: Int?
    for (i, raw) in lines.enumerated() {
      let l = ConfigValue.trim(Substring(raw))
      if l.hasPrefix("[") {
        inSection = l.hasSuffix("]") && ConfigValue.trim(l.dropFirst().dropLast()) == section
        if inSection && header == nil { header = i }
        continue
      }
      guard inSection else { continue }
      if let k = self.key(of: l), k == key {
        lines[i] = line
        return lines.joined(separator: "\n") + "\n"
      }
      if commented == nil, l.hasPrefix(";") || l.hasPrefix("#"),
        self.key(of: ConfigValue.trim(l.dropFirst())) == key
      {
        commented = i
      }
    }
    if let at = commented ?? header {
      lines.insert(line, at: at + 1)
    } else {
      if let last = lines.last, !ConfigValue.trim(Substring(last)).isEmpty { lines.append("") }
      lines += ["[\(section)]", line]
    }
    return lines.joined(separator: "\n") + "\n"
  }

  private static func key(of line: String) -> String? {
    guard !line.hasPrefix(";"), !line.hasPrefix("#"), let eq = line.firstIndex(of: "=") else {
      return nil
    }
    return ConfigValue.trim(line[..<eq])
  }
}
