import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// logind's word before the machine sleeps and after it wakes:
/// `PrepareForSleep(true)` and `(false)` on the system bus. A delay
/// inhibitor (`Inhibit("sleep", …, "delay")`) holds the sleep back until
/// `onSleep` has run (logind waits for it, up to its InhibitDelayMaxSec,
/// 5 s by default); it is released then and taken again at the wake.
///
/// `ClockChanges` notices every sleep at the resume, whoever caused it;
/// this adds the moment before, for what must happen while the machine is
/// still awake (the state file written, decisions paused). Without logind
/// (no system bus, or no `org.freedesktop.login1` on it) it does nothing
/// and says nothing: a laptop without systemd still has the clock watch.
public final class LogindSleep {
  public static let service = "org.freedesktop.login1"
  public static let path = "/org/freedesktop/login1"
  public static let manager = "org.freedesktop.login1.Manager"

  private let bus: DBusConnection
  private let log: (String) -> Void
  /// The inhibitor's descriptor while it is held (closing it releases it).
  public private(set) var inhibitor: Int32?
  private var taking = false
  /// Before the sleep, with the inhibitor still held.
  public var onSleep: (() -> Void)?
  /// After the wake.
  public var onWake: (() -> Void)?

  public init(bus: DBusConnection, log: @escaping (String) -> Void) {
    self.bus = bus
    self.log = log
  }

  deinit { release() }

  /// Follows `PrepareForSleep` and takes the inhibitor (again whenever
  /// logind starts, as after its restart).
  public func start() throws {
    try bus.match(
      "type='signal',sender='\(Self.service)',path='\(Self.path)',interface='\(Self.manager)',member='PrepareForSleep'"
    ) { [weak self] _, _, args in
      guard let self, let first = args.first, let sleeping = first.boolValue else { return }
      if sleeping { self.sleeping() } else { self.woke() }
    }
    try bus.watchOwner(of: Self.service) { [weak self] running in
      guard let self else { return }
      if running { self.take() } else { self.release() }
    }
    take()
  }

  private func sleeping() {
    onSleep?()
    release()
  }

  private func woke() {
    take()
    onWake?()
  }

  private func take() {
    guard inhibitor == nil, !taking else { return }
    taking = true
    bus.call(
      destination: Self.service, path: Self.path, interface: Self.manager, member: "Inhibit",
      [
        .string("sleep"), .string("Earshot"),
        .string("saves presence state and pauses decisions before the machine sleeps"),
        .string("delay"),
      ]
    ) { [weak self] result in
      guard let self else { return }
      self.taking = false
      switch result {
      case .success(let values):
        guard case .unixFD(let fd)? = values.first else { return }
        if self.inhibitor == nil { self.inhibitor = fd } else { close(fd) }
      case .failure(let error):
        // No logind here: the clock watch is enough, and nothing is said.
        let absent = [
          "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
        ]
        if !absent.contains(where: error.isRemote) {
          self.log("logind: no sleep inhibitor (\(error)); sleeps are noticed at the resume")
        }
      }
    }
  }

  private func release() {
    if let fd = inhibitor { close(fd) }
    inhibitor = nil
  }
}
