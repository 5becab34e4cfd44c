// libFuzzer target: what Earshot does with a config file's sections, keys
// and values (libinih splits the lines; here a minimal splitter stands in
// for it) — validation, every key's parser, shell-word splitting of hooks.

@testable import EarshotCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  var doc = ConfigDocument(file: "fuzz.conf")
  var section = ""
  for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
    let line = raw.trimmingCharacters()
    if line.hasPrefix("["), line.hasSuffix("]"), line.count >= 2 {
      section = String(line.dropFirst().dropLast())
      doc.headers.append(SectionHeader(name: section, line: i + 1))
    } else if let eq = line.firstIndex(of: "=") {
      let key = String(line[..<eq]).trimmingCharacters()
      let value = String(line[line.index(after: eq)...]).trimmingCharacters()
      doc.entries.append(ConfigEntry(section: section, key: key, value: value, line: i + 1))
      _ = try? ShellWords.split(value)
    }
  }
  _ = try? Config.build(doc)
  return 0
}

extension StringProtocol {
  fileprivate func trimmingCharacters() -> String {
    var s = Substring(self)
    while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
    while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
    return String(s)
  }
}
