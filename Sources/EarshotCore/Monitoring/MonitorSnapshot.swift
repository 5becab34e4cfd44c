/// What survives a restart: for each region, the state consumers were last
/// told and when its beacon was last seen. Encoded as small tab-separated
/// text (the shell writes it atomically), so a person can read it.
public struct MonitorSnapshot: Sendable, Equatable {
  public struct Entry: Sendable, Equatable {
    public var name: String
    /// The region's definition (`uuid[:major[:minor]]`): a region redefined
    /// since the snapshot starts afresh.
    public var identity: String
    public var known: RegionState
    /// The wall time shown for the last sighting (a later run reads it).
    public var lastSeen: WallTime?

    public init(name: String, identity: String, known: RegionState, lastSeen: WallTime?) {
      self.name = name
      self.identity = identity
      self.known = known
      self.lastSeen = lastSeen
    }
  }

  public var regions: [Entry]

  public init(regions: [Entry]) { self.regions = regions }

  static let magic = "earshot-state 1"

  public func encode() -> String {
    var s = Self.magic + "\n"
    for e in regions {
      s += "region\t\(e.name)\t\(e.identity)\t\(e.known.rawValue)\t"
      s += e.lastSeen.map { String($0.micros) } ?? "-"
      s += "\n"
    }
    return s
  }

  public struct DecodeError: Error, Sendable, CustomStringConvertible {
    public let description: String
  }

  public static func decode(_ text: String) throws -> MonitorSnapshot {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: true)
    guard let first = lines.first, first == Self.magic else {
      throw DecodeError(description: "not an Earshot state file (first line is not '\(magic)')")
    }
    lines.removeFirst()
    var out: [Entry] = []
    for (n, line) in lines.enumerated() {
      let f = line.split(separator: "\t", omittingEmptySubsequences: false)
      guard f.count == 5, f[0] == "region",
        let known = RegionState(rawValue: String(f[3])), known != .unknown
      else {
        throw DecodeError(description: "line \(n + 2) is not 'region NAME IDENTITY STATE TIME'")
      }
      let seen: WallTime?
      if f[4] == "-" {
        seen = nil
      } else if let v = Int64(f[4]) {
        seen = WallTime(micros: v)
      } else {
        throw DecodeError(description: "line \(n + 2): bad time '\(f[4])'")
      }
      out.append(Entry(name: String(f[1]), identity: String(f[2]), known: known, lastSeen: seen))
    }
    return MonitorSnapshot(regions: out)
  }
}
