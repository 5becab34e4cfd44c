import Foundation

@testable import EarshotCore

/// The few INI lines a core test writes, as libinih would hand them over
/// (the core has no INI reader of its own).
func document(_ text: String, file: String = "x.conf") -> ConfigDocument {
  var doc = ConfigDocument(file: file)
  var section = ""
  for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
    let line = raw.trimmingCharacters(in: .whitespaces)
    if line.hasPrefix("[") && line.hasSuffix("]") {
      section = String(line.dropFirst().dropLast())
      doc.headers.append(SectionHeader(name: section, line: n + 1))
    } else if let eq = line.firstIndex(of: "=") {
      doc.entries.append(
        ConfigEntry(
          section: section, key: line[..<eq].trimmingCharacters(in: .whitespaces),
          value: line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces),
          line: n + 1))
    }
  }
  return doc
}
