import EarshotCore

/// The laptop as a Find Me target: a bonded device writing the Immediate
/// Alert service's Alert Level rings it through the same requests as every
/// requester. 1 (mild) rings at the user's own volume, 2 (high) with the
/// raise, 0 withdraws the device's request (a device stop, not a found).
///
/// Its devices are `findme:ADDRESS`, apart from the same device's link
/// requests (`ble:ADDRESS`): the standard service has no way to tell a
/// device the laptop was found, so this link takes the phone-found notice
/// itself (logged, and published as every notice result is).
public final class FindMeDeviceLink: DeviceLink {
  public let linkName = "findme"
  /// A notice for one of its devices: the link answers it (the agent's
  /// `.noticeResult` request); it never reaches the device.
  var onNotice: ((NoticeID, DeviceID) -> Void)?

  public static func device(_ address: BDAddress) -> DeviceID {
    DeviceID(link: "findme", name: address.description)
  }

  public static func request(_ level: AlertLevel) -> DeviceRequest {
    switch level {
    case .none: .findStop
    case .mild: .findStartMild
    case .high: .findStart
    }
  }

  public func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool {
    onNotice?(id, device)
    return true
  }
}
