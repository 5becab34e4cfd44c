/// The GATT services and characteristics a key-finder tag is driven
/// through, as BlueZ spells their UUIDs (128-bit, lower case, on the
/// Bluetooth base UUID).
public enum TagGATT {
  /// The vendor button service of "iTag"-style tags and its notify characteristic.
  public static let buttonService = uuid16(0xFFE0)
  public static let button = uuid16(0xFFE1)
  /// Immediate Alert (the tag beeps at the level written) and Link Loss
  /// (the level it beeps at when the link drops); both hold Alert Level.
  public static let immediateAlertService = uuid16(0x1802)
  public static let linkLossService = uuid16(0x1803)
  public static let alertLevel = uuid16(0x2A06)
  public static let batteryService = uuid16(0x180F)
  public static let batteryLevel = uuid16(0x2A19)

  /// A 16-bit SIG UUID on the base UUID: 0000XXXX-0000-1000-8000-00805f9b34fb.
  public static func uuid16(_ short: UInt16) -> String { AlertLevel.bluetoothBaseUUID(short) }

  /// A button press is one byte (iTags send 0x01).
  public static let pressLength = 1
}

/// Which Alert Level characteristic a write goes to.
public enum TagAlertTarget: String, Sendable, Equatable {
  case immediateAlert = "immediate_alert"
  case linkLoss = "link_loss"

  public var serviceUUID: String {
    self == .immediateAlert ? TagGATT.immediateAlertService : TagGATT.linkLossService
  }
  /// As logs name it.
  public var title: String { self == .immediateAlert ? "Immediate Alert" : "Link Loss" }
}

/// What a connected tag turned out to have.
public struct TagFeatures: Equatable, Sendable {
  public var button: Bool
  public var immediateAlert: Bool
  public var linkLoss: Bool
  public var battery: Bool

  public init(button: Bool, immediateAlert: Bool, linkLoss: Bool, battery: Bool) {
    self.button = button
    self.immediateAlert = immediateAlert
    self.linkLoss = linkLoss
    self.battery = battery
  }
}
