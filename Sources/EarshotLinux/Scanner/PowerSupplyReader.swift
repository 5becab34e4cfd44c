import EarshotCore

/// Reads where the machine's power comes from out of sysfs
/// (`/sys/class/power_supply`, what UPower reads too), at most every
/// `refreshSeconds`: the scan scheduler asks often, the answer changes
/// when a charger is plugged in or out.
public final class PowerSupplyReader {
  public let root: String
  public let refreshSeconds: Double
  private var cached: (power: PowerSupply, at: MonotonicTime)?

  public init(root: String = "/sys/class/power_supply", refreshSeconds: Double = 30) {
    self.root = root
    self.refreshSeconds = refreshSeconds
  }

  /// The power source now (mains when sysfs cannot be read: a desktop, a
  /// container).
  public func current(now: MonotonicTime = Clock.now()) -> PowerSupply {
    if let cached, now.nanos &- cached.at.nanos < UInt64(refreshSeconds * 1e9) {
      return cached.power
    }
    let power = PowerSupply(supplies: entries())
    cached = (power, now)
    return power
  }

  /// Forget the cached answer (the next `current` reads sysfs).
  public func invalidate() { cached = nil }

  func entries() -> [PowerSupplyEntry] {
    guard let names = try? BondStoreReader.directoryNames(root) else { return [] }
    return names.sorted().compactMap { name in
      let dir = root + "/" + name
      guard let type = attribute(dir, "type") else { return nil }
      return PowerSupplyEntry(
        type: type, online: attribute(dir, "online").map { $0 == "1" },
        scope: attribute(dir, "scope"), status: attribute(dir, "status"))
    }
  }

  private func attribute(_ dir: String, _ name: String) -> String? {
    guard let bytes = try? FileBytes(path: dir + "/" + name).bytes, bytes.count < 256 else {
      return nil
    }
    var text = Substring(String(decoding: bytes, as: UTF8.self))
    while text.last?.isWhitespace == true { text = text.dropLast() }
    return String(text)
  }
}
