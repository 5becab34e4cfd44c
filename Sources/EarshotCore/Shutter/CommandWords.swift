/// Splits a command line into words the way a POSIX shell would, without
/// running a shell: blanks separate words; '...' is literal; "..." keeps
/// blanks and honours \" \\ \$ \` inside; a backslash outside quotes takes
/// the next character literally. No variables, globs or pipes: what is
/// written is what runs.
public enum CommandWords {
  public struct Failure: Error, Equatable, CustomStringConvertible {
    public let description: String
  }

  public static func split(_ line: String) throws -> [String] {
    var words: [String] = []
    var word = ""
    var inWord = false
    var chars = line.makeIterator()
    while let c = chars.next() {
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
        while let d = chars.next() {
          if d == "'" {
            closed = true
            break
          }
          word.append(d)
        }
        guard closed else { throw Failure(description: "unterminated ' in: \(line)") }
      case "\"":
        inWord = true
        var closed = false
        while let d = chars.next() {
          if d == "\"" {
            closed = true
            break
          }
          if d == "\\" {
            guard let e = chars.next() else { break }
            if e != "\"" && e != "\\" && e != "$" && e != "`" { word.append("\\") }
            word.append(e)
          } else {
            word.append(d)
          }
        }
        guard closed else { throw Failure(description: "unterminated \" in: \(line)") }
      case "\\":
        inWord = true
        guard let e = chars.next() else {
          throw Failure(description: "trailing backslash in: \(line)")
        }
        word.append(e)
      default:
        inWord = true
        word.append(c)
      }
    }
    if inWord { words.append(word) }
    return words
  }
}
