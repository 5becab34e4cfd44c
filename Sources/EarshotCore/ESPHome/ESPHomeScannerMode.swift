/// The proxy's scanner as ESPHome reports it to Home Assistant
/// (BluetoothScannerStateResponse, with `FEATURE_STATE_AND_MODE`): whether
/// it runs, the mode it scans in now, and the mode it is configured for.
public struct ESPHomeScannerStatus: Equatable, Sendable {
  /// aioesphomeapi's BluetoothScannerState values.
  public enum State: UInt64, Sendable {
    case idle = 0
    case starting = 1
    case running = 2
    case failed = 3
    case stopping = 4
    case stopped = 5
  }

  public var state: State
  /// Scanning actively now (scan requests sent: names from scan responses).
  public var active: Bool
  /// `[scanner] passive = false`: what the agent scans with when no client asks.
  public var configuredActive: Bool

  public init(state: State, active: Bool, configuredActive: Bool) {
    self.state = state
    self.active = active
    self.configuredActive = configuredActive
  }

  /// The BluetoothScannerStateResponse body: state (1), mode (2),
  /// configured_mode (3); modes are PASSIVE 0, ACTIVE 1.
  public var body: [UInt8] {
    var w = ProtobufWriter()
    w.uint(1, state.rawValue)
    w.uint(2, active ? 1 : 0)
    w.uint(3, configuredActive ? 1 : 0)
    return w.bytes
  }

  /// Which mode the shared scanner is asked for: active when the
  /// configuration says so or any client asks for it (`nil`: that client
  /// never asked). A client's passive request never turns off what the
  /// configuration or another client needs: Home Assistant asks passive
  /// between its active windows, and presence works either way.
  public static func wantsActive(configuredActive: Bool, requests: some Sequence<Bool?>) -> Bool {
    configuredActive || requests.contains { $0 == true }
  }
}
