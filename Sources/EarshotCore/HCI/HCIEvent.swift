/// The first byte of an H4 packet: what kind of HCI packet follows (Core
/// Vol 4, Part A, 2). Raw HCI sockets, btsnoop 1002 and pcap 201 use it.
public struct H4PacketType: RawRepresentable, Hashable, Sendable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let command = H4PacketType(rawValue: 0x01)
  public static let aclData = H4PacketType(rawValue: 0x02)
  public static let synchronousData = H4PacketType(rawValue: 0x03)
  public static let event = H4PacketType(rawValue: 0x04)
  public static let isoData = H4PacketType(rawValue: 0x05)
}

/// An HCI event code (Core Vol 4, Part E, 7.7), the first byte of a bare event.
public struct HCIEventCode: RawRepresentable, Hashable, Sendable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// 7.7.7: a Remote Name Request's outcome (the page answered, or not).
  public static let remoteNameRequestComplete = HCIEventCode(rawValue: 0x07)
  /// 7.7.14: the answer to most commands, with their return parameters.
  public static let commandComplete = HCIEventCode(rawValue: 0x0E)
  /// 7.7.15: the answer to commands that complete later.
  public static let commandStatus = HCIEventCode(rawValue: 0x0F)
  /// 7.7.16
  public static let hardwareError = HCIEventCode(rawValue: 0x10)
  /// 7.7.65: LE events, told apart by a subevent code (`LESubeventCode`).
  public static let leMeta = HCIEventCode(rawValue: 0x3E)
  /// Not from a controller: Linux's HCI_EV_STACK_INTERNAL, which the kernel
  /// delivers on raw sockets to say adapters were added, removed, powered
  /// on or off (`HCIStackInternal`).
  public static let stackInternal = HCIEventCode(rawValue: 0xFD)
  /// 7.7 (0xFF): vendor-specific events.
  public static let vendorSpecific = HCIEventCode(rawValue: 0xFF)
}

/// The subevent code of an LE Meta event (Core Vol 4, Part E, 7.7.65.x).
public struct LESubeventCode: RawRepresentable, Hashable, Sendable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// 7.7.65.2
  public static let advertisingReport = LESubeventCode(rawValue: 0x02)
  /// 7.7.65.11
  public static let directedAdvertisingReport = LESubeventCode(rawValue: 0x0B)
  /// 7.7.65.13
  public static let extendedAdvertisingReport = LESubeventCode(rawValue: 0x0D)
}

/// An adapter lifecycle event the Linux kernel reports in a stack-internal
/// event: the HCI_DEV_* values of the kernel's include/net/bluetooth/hci.h.
public struct HCIDeviceEvent: RawRepresentable, Hashable, Sendable {
  public let rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }

  /// HCI_DEV_REG: an adapter appeared (plugged in, driver loaded).
  public static let registered = HCIDeviceEvent(rawValue: 1)
  /// HCI_DEV_UNREG: an adapter is gone (unplugged, driver unloaded).
  public static let unregistered = HCIDeviceEvent(rawValue: 2)
  /// HCI_DEV_UP: powered on.
  public static let up = HCIDeviceEvent(rawValue: 3)
  /// HCI_DEV_DOWN: powered off.
  public static let down = HCIDeviceEvent(rawValue: 4)
  /// HCI_DEV_SUSPEND
  public static let suspend = HCIDeviceEvent(rawValue: 5)
  /// HCI_DEV_RESUME
  public static let resume = HCIDeviceEvent(rawValue: 6)
  /// HCI_DEV_OPEN
  public static let open = HCIDeviceEvent(rawValue: 7)
  /// HCI_DEV_CLOSE
  public static let close = HCIDeviceEvent(rawValue: 8)
  /// HCI_DEV_SETUP
  public static let setup = HCIDeviceEvent(rawValue: 9)
}

/// Linux's stack-internal event (HCI_EV_STACK_INTERNAL, 0xFD), as the
/// kernel's include/net/bluetooth/hci.h lays it out: a 16-bit type, then
/// for type HCI_EV_SI_DEVICE (1) the device event and the adapter index,
/// all little-endian.
public enum HCIStackInternal {
  /// HCI_EV_SI_DEVICE
  public static let deviceType: UInt16 = 0x0001

  /// The device event and adapter index in a bare event (code first);
  /// `nil` for any other event.
  public static func deviceEvent(event: UnsafeRawBufferPointer) -> (
    event: HCIDeviceEvent, index: UInt16
  )? {
    var r = ByteReader(event)
    // Parameters: type (2), then event (2) and index (2).
    guard r.u8() == HCIEventCode.stackInternal.rawValue, let length = r.u8(), length >= 6,
      Int(length) <= r.remaining, r.u16le() == deviceType, let e = r.u16le(),
      let index = r.u16le()
    else { return nil }
    return (HCIDeviceEvent(rawValue: e), index)
  }
}
