/// The media library: every audio file under `[media] library`, with the
/// title to match on (from its tags where libsndfile could read them, else
/// the file name), and the search that finds a title the way people say it.

/// One file in the library.
public struct MediaItem: Sendable, Equatable {
  public let path: String
  /// The tag title, or the file name without its extension.
  public let title: String
  public let artist: String?
  /// libsndfile could open it, so the built-in ALSA player can play it.
  /// Other files (AAC, WMA...) are indexed by name for an MPRIS player.
  public let decodable: Bool

  let titleWords: [String]
  let artistWords: [String]
  let fileWords: [String]

  public init(path: String, title: String?, artist: String?, decodable: Bool) {
    self.path = path
    let stem = MediaItem.stem(of: path)
    let cleanTitle = title.flatMap { $0.trimmedWhitespace.isEmpty ? nil : $0.trimmedWhitespace }
    self.title = cleanTitle ?? stem
    self.artist = artist.flatMap { $0.trimmedWhitespace.isEmpty ? nil : $0.trimmedWhitespace }
    self.decodable = decodable
    titleWords = TextFolding.words(self.title)
    artistWords = TextFolding.words(self.artist ?? "")
    fileWords = TextFolding.words(stem)
  }

  /// "/music/01 - Hey Jude.flac" → "01 - Hey Jude".
  public static func stem(of path: String) -> String {
    let name =
      path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init)
      ?? path
    guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
    return String(name[..<dot])
  }

  /// File extensions the library indexes (lower case, no dot).
  public static let audioExtensions: Set<String> = [
    "wav", "flac", "ogg", "oga", "opus", "mp3", "aif", "aiff", "aifc", "au", "snd", "w64",
    "caf", "m4a", "aac", "wma", "wv", "ape", "mpc", "mka",
  ]

  public static func isAudioFile(_ path: String) -> Bool {
    let name = path.split(separator: "/").last ?? ""
    guard let dot = name.lastIndex(of: ".") else { return false }
    return audioExtensions.contains(String(name[name.index(after: dot)...]).lowercased())
  }
}

/// How well a title matched, best first. The tiers, from best:
/// - `exact`: the query's words are the title's words ("hey jude" for
///   "Hey Jude!").
/// - `artistAndTitle`: the query is the artist and the title in either
///   order ("the beatles hey jude", "hey jude the beatles").
/// - `titlePrefix`: the title begins with the query, the last word possibly
///   unfinished ("hey" or "hey ju" for "Hey Jude").
/// - `titleWords`: every query word is a word of the title, in any order.
/// - `anywhere`: every query word is a word, or the start of a word, of the
///   title, the artist or the file name.
/// A file with any query word nowhere is not a match. Within a tier, the
/// title with fewer words the query did not mention wins (the closer
/// match), then alphabetical order, then the path, so results are stable.
public enum MatchTier: Int, Sendable, Comparable {
  case anywhere = 1
  case titleWords = 2
  case titlePrefix = 3
  case artistAndTitle = 4
  case exact = 5

  public static func < (a: MatchTier, b: MatchTier) -> Bool { a.rawValue < b.rawValue }
}

public struct MediaMatch: Sendable, Equatable {
  public let item: MediaItem
  public let tier: MatchTier
  /// Title words the query did not mention.
  public let extraWords: Int

  /// One number for logs: tier × 1000 − extra words.
  public var score: Int { tier.rawValue * 1000 - min(extraWords, 999) }
}

public struct MediaLibrary: Sendable {
  public private(set) var items: [MediaItem]

  public init(_ items: [MediaItem] = []) {
    self.items = items
  }

  public mutating func add(_ item: MediaItem) { items.append(item) }

  public var isEmpty: Bool { items.isEmpty }

  /// Every match, best first. An empty query (or one of only punctuation)
  /// matches nothing.
  public func search(_ query: String) -> [MediaMatch] {
    let q = TextFolding.words(query)
    guard !q.isEmpty else { return [] }
    var matches: [MediaMatch] = []
    for item in items {
      guard let tier = MediaLibrary.tier(q, item) else { continue }
      let mentioned = Set(q)
      let extra = item.titleWords.filter { !mentioned.contains($0) }.count
      matches.append(MediaMatch(item: item, tier: tier, extraWords: extra))
    }
    matches.sort { a, b in
      if a.tier != b.tier { return a.tier > b.tier }
      if a.extraWords != b.extraWords { return a.extraWords < b.extraWords }
      let ta = TextFolding.fold(a.item.title)
      let tb = TextFolding.fold(b.item.title)
      if ta != tb { return ta < tb }
      return a.item.path < b.item.path
    }
    return matches
  }

  /// The best match, if any.
  public func best(_ query: String) -> MediaMatch? { search(query).first }

  static func tier(_ q: [String], _ item: MediaItem) -> MatchTier? {
    let t = item.titleWords
    if q == t { return .exact }
    let a = item.artistWords
    if !a.isEmpty, q == a + t || q == t + a { return .artistAndTitle }
    if q.count <= t.count, Array(t.prefix(q.count - 1)) == q.dropLast(),
      t[q.count - 1].hasPrefix(q[q.count - 1])
    {
      return .titlePrefix
    }
    let titleSet = Set(t)
    if q.allSatisfy(titleSet.contains) { return .titleWords }
    let all = t + a + item.fileWords
    if q.allSatisfy({ word in all.contains { $0.hasPrefix(word) } }) { return .anywhere }
    return nil
  }
}

extension String {
  var trimmedWhitespace: String {
    let scalars = unicodeScalars
    guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
    let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
    return String(scalars[first...last])
  }
}
