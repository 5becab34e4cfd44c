/// The sections of the agent's `status`, in the order they are shown.
/// Each part of the agent provides its own; a section no part provides is
/// shown with its `absent` value, or left out when that is nil.
public enum StatusSection: String, CaseIterable, Sendable {
  case agent, find, volume
  case monitoring, regions, beacons, adapter
  /// The live scan's timing, duty and mean duty per power source.
  case scan
  case shutter, media
  /// The Home Assistant Bluetooth proxy, when [esphome] is enabled.
  case esphome
  /// Shown only when [tag] sections are configured.
  case tags
  /// Bonded devices (identity, IRK or not, last seen), when the agent follows them.
  case devices
  /// The trackers the watch keeps, when [trackers] is enabled.
  case trackers

  /// What a section says when no part provides it.
  public var absent: JSONValue? {
    switch self {
    case .monitoring: .bool(false)
    case .regions, .beacons: .array([])
    case .volume: .null
    default: nil
    }
  }
}
