/// An iBeacon, or a device known by its identity: what the monitor tracks
/// (`TrackKey`, the device with its key) and what rooms place
/// (`RoomSubject`, the device by the id every agent agrees on).
public enum BeaconOrDevice<Device>: Hashable, Sendable, Comparable, CustomStringConvertible
where Device: Hashable & Sendable & Comparable & CustomStringConvertible {
  case beacon(TrackedID)
  case device(Device)

  public var beacon: TrackedID? {
    if case .beacon(let b) = self { return b }
    return nil
  }

  public var device: Device? {
    if case .device(let d) = self { return d }
    return nil
  }

  /// `UUID:MAJOR:MINOR`, or the device as it prints itself.
  public var description: String {
    switch self {
    case .beacon(let b): b.description
    case .device(let d): d.description
    }
  }

  /// Beacons before devices; each kind in its own order.
  public static func < (a: Self, b: Self) -> Bool {
    switch (a, b) {
    case (.beacon(let x), .beacon(let y)): x < y
    case (.device(let x), .device(let y)): x < y
    case (.beacon, .device): true
    case (.device, .beacon): false
    }
  }
}
