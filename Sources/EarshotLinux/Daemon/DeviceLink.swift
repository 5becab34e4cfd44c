import EarshotCore

/// How devices reach the find-phone coordinator: a link turns its own
/// requests into `FindPhoneDriver.submit(.deviceStart(...))` and friends,
/// and delivers the phone-found notice. The local socket link is below; the
/// BLE (GATT) and MQTT links implement the same protocol.
public protocol DeviceLink: AnyObject {
  /// The `link` part of the DeviceIDs this link creates ("socket", "ble", "mqtt").
  var linkName: String { get }
  /// Sends the phone-found notice. Returns false when the device cannot be
  /// reached now (the notice then fails at once). The device's answer comes
  /// back as `.noticeResult(id, ...)`.
  func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool
}

/// The local device link: a control-socket client that sent
/// `device.register` speaks for that device. Several connections may use the
/// same name (a device and a tool acting for it); a notice goes to each of
/// them and the first answer counts.
public final class SocketDeviceLink: DeviceLink {
  public let linkName = "socket"
  private let server: ControlServer
  private var deviceOfClient: [ControlServer.ClientID: DeviceID] = [:]
  /// Called when the last connection of a device closes.
  public var onDeviceGone: ((DeviceID) -> Void)?

  public init(server: ControlServer) {
    self.server = server
  }

  public func register(_ client: ControlServer.ClientID, name: String) -> DeviceID {
    let device = DeviceID(link: linkName, name: name)
    if let old = deviceOfClient[client], old != device {
      deviceOfClient[client] = nil
      if !deviceOfClient.values.contains(old) { onDeviceGone?(old) }
    }
    deviceOfClient[client] = device
    return device
  }

  public func device(of client: ControlServer.ClientID) -> DeviceID? { deviceOfClient[client] }

  public func clientGone(_ client: ControlServer.ClientID) {
    guard let device = deviceOfClient.removeValue(forKey: client) else { return }
    if !deviceOfClient.values.contains(device) { onDeviceGone?(device) }
  }

  public func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool {
    let line = ControlProtocol.event(
      "notice",
      [
        ("notice", .int(id)), ("kind", .string("phone_found")), ("device", .string(device.name)),
      ])
    var delivered = false
    for (client, d) in deviceOfClient.sorted(by: { $0.key < $1.key }) where d == device {
      if server.send(client, line) { delivered = true }
    }
    return delivered
  }
}
