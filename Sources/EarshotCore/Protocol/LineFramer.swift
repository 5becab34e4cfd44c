/// Splits a byte stream into lines (LF, optional CR before it), with a bound
/// on line length: a longer line is reported once as `.oversized` and its
/// bytes are dropped up to the next newline, so one bad line costs one error
/// and the stream goes on.
public struct LineFramer: Sendable {
  public enum Item: Equatable, Sendable {
    case line([UInt8])
    /// A line longer than the limit was skipped.
    case oversized
  }

  public let limit: Int
  private var partial: [UInt8] = []
  private var discarding = false

  public init(limit: Int = 64 * 1024) {
    self.limit = limit
  }

  /// Bytes held for an unfinished line.
  public var pending: Int { partial.count }

  public mutating func push(_ bytes: UnsafeRawBufferPointer) -> [Item] {
    var items: [Item] = []
    var start = 0
    for (index, byte) in bytes.enumerated() where byte == 0x0A {
      take(UnsafeRawBufferPointer(rebasing: bytes[start..<index]), complete: true, &items)
      start = index + 1
    }
    take(UnsafeRawBufferPointer(rebasing: bytes[start...]), complete: false, &items)
    return items
  }

  public mutating func push(_ bytes: [UInt8]) -> [Item] {
    bytes.withUnsafeBytes { push($0) }
  }

  private mutating func take(_ chunk: UnsafeRawBufferPointer, complete: Bool, _ items: inout [Item])
  {
    if !discarding {
      if partial.count + chunk.count > limit {
        discarding = true
        partial.removeAll(keepingCapacity: false)
        items.append(.oversized)
      } else {
        partial.append(contentsOf: chunk)
      }
    }
    guard complete else { return }
    if discarding {
      discarding = false
    } else {
      if partial.last == 0x0D { partial.removeLast() }
      items.append(.line(partial))
      partial.removeAll(keepingCapacity: true)
    }
  }
}
