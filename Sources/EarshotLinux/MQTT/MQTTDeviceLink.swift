import EarshotCore

/// The device behind MQTT's "Ring this laptop" button (`mqtt:button`):
/// a ring starts find-phone as this device, and its phone-found notice is
/// handed to `onNotice`, which publishes and accepts it (a broker has no
/// device to answer).
public final class MQTTDeviceLink: DeviceLink {
  public let linkName = "mqtt"
  public let device = DeviceID(link: "mqtt", name: "button")
  public var onNotice: ((NoticeID, DeviceID) -> Void)?

  public init() {}

  public func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool {
    guard let onNotice else { return false }
    onNotice(id, device)
    return true
  }
}
