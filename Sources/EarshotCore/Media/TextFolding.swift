/// Case- and accent-insensitive text for matching titles.
///
/// Swift's standard library has no public Unicode decomposition, so
/// diacritics are folded with two rules instead of a hand-made table of
/// every accented letter:
/// 1. Combining marks (already decomposed input, e.g. "e\u{301}") are
///    dropped.
/// 2. A precomposed Latin letter is replaced by its base letter, read from
///    its Unicode name: "LATIN SMALL LETTER E WITH ACUTE" → "e". This covers
///    every accented Latin letter Unicode has (French, German, Polish,
///    Vietnamese, ...), strokes included (ø, ł, đ).
/// A short table handles letters that are not "X WITH ...": ß, æ, œ, þ, ð,
/// dotless ı and the ligatures.
public enum TextFolding {
  /// Letters whose folded form is not "base letter of the name".
  static let special: [Unicode.Scalar: String] = [
    "ß": "ss", "ẞ": "ss", "æ": "ae", "Æ": "ae", "œ": "oe", "Œ": "oe", "þ": "th", "Þ": "th",
    "ð": "d", "Ð": "d", "ı": "i", "ﬁ": "fi", "ﬂ": "fl", "ﬀ": "ff", "ĳ": "ij", "Ĳ": "ij",
  ]

  /// The folded form: lower case, no diacritics; everything else kept.
  public static func fold(_ text: String) -> String {
    var out = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
      if scalar.isASCII {
        out.append(contentsOf: Character(scalar).lowercased().unicodeScalars)
        continue
      }
      let p = scalar.properties
      if p.generalCategory == .nonspacingMark || p.generalCategory == .enclosingMark {
        continue
      }
      if let s = special[scalar] {
        out.append(contentsOf: s.unicodeScalars)
        continue
      }
      if let base = latinBase(of: scalar) {
        out.append(base)
        continue
      }
      out.append(contentsOf: p.lowercaseMapping.unicodeScalars)
    }
    return String(out)
  }

  /// "LATIN CAPITAL LETTER A WITH RING ABOVE" → "a"; nil for anything that
  /// is not a single Latin letter with a diacritic.
  static func latinBase(of scalar: Unicode.Scalar) -> Unicode.Scalar? {
    guard let name = scalar.properties.name else { return nil }
    let prefixes = ["LATIN SMALL LETTER ", "LATIN CAPITAL LETTER "]
    guard let prefix = prefixes.first(where: { name.hasPrefix($0) }) else { return nil }
    let rest = name.dropFirst(prefix.count)
    // Exactly one letter, then " WITH ...".
    guard rest.count > 6, rest.dropFirst().hasPrefix(" WITH "),
      let letter = rest.unicodeScalars.first, ("A"..."Z").contains(letter)
    else { return nil }
    return Unicode.Scalar(letter.value + 0x20)
  }

  /// The folded text split into words: runs of letters and digits.
  /// Apostrophes inside words are dropped ("don't" → "dont").
  public static func words(_ text: String) -> [String] {
    var words: [String] = []
    var current = String.UnicodeScalarView()
    for scalar in fold(text).unicodeScalars {
      if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
        current.append(scalar)
      } else if scalar == "'" || scalar == "\u{2019}" {
        continue
      } else if !current.isEmpty {
        words.append(String(current))
        current = String.UnicodeScalarView()
      }
    }
    if !current.isEmpty { words.append(String(current)) }
    return words
  }
}
