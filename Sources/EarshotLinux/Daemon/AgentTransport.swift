import EarshotCore

/// A way requests reach the agent and its events leave it: the control
/// socket, the BLE link, MQTT. An adapter maps its wire format to
/// `DeviceRequest`s, hands them to `Daemon.perform`, and maps each
/// `RequestOutcome` and `AgentEvent` back to its wire. The daemon never
/// switches on which transport a request came from.
public protocol AgentTransport: AnyObject {
  /// Orders transports (events reach them sorted by name) and names them in logs.
  var name: String { get }
  /// How find-phone reaches this transport's devices (the phone-found
  /// notice), if it has any.
  var deviceLink: DeviceLink? { get }
  /// Called by `Daemon.run` once every part is in place, before serving.
  func start()
  /// An event of the agent's, for this transport's wire.
  func agentEvent(_ event: AgentEvent)
  /// The daemon stops: say goodbye and close.
  func stop()
}

/// How find-phone delivers the phone-found notice to a device: each
/// transport with devices has one. The device's answer comes back as a
/// `.noticeResult` request.
public protocol DeviceLink: AnyObject {
  /// The `link` part of the DeviceIDs this link creates ("socket", "ble", "mqtt").
  var linkName: String { get }
  /// Sends the phone-found notice. Returns false when the device cannot be
  /// reached now (the notice then fails at once).
  func deliverNotice(_ id: NoticeID, to device: DeviceID) -> Bool
}
