/// Splits a command line into arguments the way a POSIX shell does (blanks
/// separate words; single quotes keep everything; double quotes keep all but
/// `\"`, `\\`, `\$` and `` \` ``; a backslash outside quotes keeps the next
/// character) but without any expansion: `$HOME`, `*` and `~` stay as
/// written, and `;`, `|`, `&` are ordinary characters. Hooks then run with
/// posix_spawn, never through a shell.
public enum ShellWords {
  public struct SplitError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
  }

  public static func split(_ line: String) throws -> [String] {
    var words: [String] = []
    var word = ""
    var inWord = false
    var it = line.unicodeScalars.makeIterator()
    while let c = it.next() {
      switch c {
      case " ", "\t", "\n":
        if inWord {
          words.append(word)
          word = ""
          inWord = false
        }
      case "'":
        inWord = true
        var closed = false
        while let q = it.next() {
          if q == "'" {
            closed = true
            break
          }
          word.unicodeScalars.append(q)
        }
        guard closed else { throw SplitError(description: "unterminated single quote") }
      case "\"":
        inWord = true
        var closed = false
        while let q = it.next() {
          if q == "\"" {
            closed = true
            break
          }
          if q == "\\" {
            guard let n = it.next() else { break }
            if n == "\"" || n == "\\" || n == "$" || n == "`" {
              word.unicodeScalars.append(n)
            } else if n == "\n" {
              continue
            } else {
              word.unicodeScalars.append(q)
              word.unicodeScalars.append(n)
            }
            continue
          }
          word.unicodeScalars.append(q)
        }
        guard closed else { throw SplitError(description: "unterminated double quote") }
      case "\\":
        guard let n = it.next() else {
          throw SplitError(description: "a backslash at the end escapes nothing")
        }
        if n != "\n" {
          inWord = true
          word.unicodeScalars.append(n)
        }
      default:
        inWord = true
        word.unicodeScalars.append(c)
      }
    }
    if inWord { words.append(word) }
    return words
  }

  /// The inverse, for display: quotes words that need it so that
  /// `split(join(x)) == x`.
  public static func join(_ words: [String]) -> String {
    words.map(quote).joined(separator: " ")
  }

  static func quote(_ w: String) -> String {
    let plain = w.unicodeScalars.allSatisfy { s in
      (s >= "a" && s <= "z") || (s >= "A" && s <= "Z") || (s >= "0" && s <= "9")
        || "-_./:=@%+,".unicodeScalars.contains(s)
    }
    if plain && !w.isEmpty { return w }
    var s = "'"
    for c in w.unicodeScalars {
      if c == "'" { s += "'\\''" } else { s.unicodeScalars.append(c) }
    }
    return s + "'"
  }
}
