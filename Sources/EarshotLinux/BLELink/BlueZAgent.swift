import EarshotCore

/// A BlueZ pairing agent (org.bluez.Agent1) that reports every request and
/// answers it by `accept`: for a headless machine acting as the accessory,
/// and for the kernel test bed. A desktop normally has its own agent.
public final class BlueZAgent {
  public static let path = "/org/earshot/agent"
  private let bus: DBusConnection
  private let loop: EventLoop
  public let capability: String
  /// Accept pairing requests (true) or reject them.
  public var accept: Bool
  /// (method, device path, passkey or nil)
  public var onRequest: ((String, String, UInt32?) -> Void)?
  public var onLog: ((String) -> Void)?

  public init(loop: EventLoop, capability: String, accept: Bool, busAddress: String? = nil) throws {
    bus = try DBusConnection(loop: loop, address: busAddress)
    self.loop = loop
    self.capability = capability
    self.accept = accept
    try bus.serve(prefix: Self.path) { [unowned self] call in self.handle(call) }
  }

  /// Where the agent stands with bluetoothd.
  public enum State {
    /// Registered, and the default agent.
    case ready
    /// bluetoothd refused or did not answer.
    case failed(DBusError)
    /// bluetoothd left the bus: the registration died with it.
    case bluetoothdGone
  }

  /// One registration attempt; replies to an older one are ignored.
  private var attempt = 0
  /// After a bluetoothd restart a refused registration is tried again,
  /// once a second, this many times (it may still be starting up).
  private static let retries = 10

  /// Registers with bluetoothd as the default agent, and again whenever
  /// bluetoothd comes back on the bus (its registrations die with it),
  /// trying for ten seconds then.
  public func start(_ onState: @escaping (State) -> Void) {
    do {
      try bus.watchOwner(of: "org.bluez") { [weak self] present in
        guard let self else { return }
        if present {
          self.register(onState, retries: Self.retries)
        } else {
          self.attempt += 1  // replies and retries still on their way change nothing now
          onState(.bluetoothdGone)
        }
      }
    } catch {
      onLog?(
        "agent: cannot watch for bluetoothd restarts (\(error)); it will not register again by itself"
      )
    }
    register(onState, retries: 0)
  }

  private func register(_ onState: @escaping (State) -> Void, retries: Int) {
    attempt += 1
    let current = attempt
    func failed(_ e: DBusError) {
      guard retries > 0 else { return onState(.failed(e)) }
      loop.after(seconds: 1) { [weak self] in
        guard let self, current == self.attempt else { return }
        self.register(onState, retries: retries - 1)
      }
    }
    bus.call(
      destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.AgentManager1",
      member: "RegisterAgent", [.objectPath(Self.path), .string(capability)]
    ) { [weak self] r in
      guard let self, current == self.attempt else { return }
      // Already registered (a retry after RequestDefaultAgent failed): go on.
      if case .failure(let e) = r, !e.isRemote("org.bluez.Error.AlreadyExists") {
        return failed(e)
      }
      self.bus.call(
        destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.AgentManager1",
        member: "RequestDefaultAgent", [.objectPath(Self.path)]
      ) { [weak self] r in
        guard let self, current == self.attempt else { return }
        switch r {
        case .success: onState(.ready)
        case .failure(let e): failed(e)
        }
      }
    }
  }

  private func handle(_ call: DBusCall) -> Bool {
    guard call.interface == "org.bluez.Agent1" else { return false }
    let args = call.arguments
    let device = args.first?.stringValue ?? ""
    var passkey: UInt32? = nil
    if args.count >= 2, case .uint32(let p) = args[1] { passkey = p }
    onRequest?(call.member, device, passkey)
    let reject = ("org.bluez.Error.Rejected", "rejected by earshot ble-agent (run with --accept)")
    switch call.member {
    case "Release", "Cancel", "DisplayPasskey", "DisplayPinCode":
      call.reply()
    case "RequestConfirmation", "RequestAuthorization", "AuthorizeService":
      if accept { call.reply() } else { call.replyError(reject.0, reject.1) }
    case "RequestPasskey":
      // Without a keyboard there is no passkey to type: refuse.
      call.replyError(reject.0, "no passkey entry on this machine")
    case "RequestPinCode":
      call.replyError(reject.0, "no PIN entry on this machine")
    default:
      return false
    }
    return true
  }
}
