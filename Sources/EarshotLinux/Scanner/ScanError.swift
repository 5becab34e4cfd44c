import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Why live scanning cannot start, each with what to do about it.
public enum ScanError: Error, CustomStringConvertible, Equatable {
  case noAdapter
  case noSuchAdapter(String, available: [String])
  case badAdapterName(String)
  case adapterDown(String)
  case blocked(String)
  case missingCapability(String, needs: String, during: String)
  case noLEScanning(String)
  case commandFailed(String, HCIOpcode, HCIStatus)
  case timeout(String, HCIOpcode)
  case adapterGone(String)
  case system(String, SystemError)

  public var description: String {
    switch self {
    case .noAdapter:
      return """
        no Bluetooth adapter found: the kernel lists none. Plug one in or enable it \
        (check `rfkill list`, `lsusb`), and make sure the kernel has Bluetooth support \
        loaded (`modprobe bluetooth btusb`).
        """
    case .noSuchAdapter(let name, let available):
      return "no adapter \(name); the kernel has "
        + (available.isEmpty ? "none" : available.joined(separator: ", "))
        + ". Pick one with --adapter, or leave it out to use the first LE-capable one."
    case .badAdapterName(let name):
      return "--adapter expects a name like hci0, not '\(name)'"
    case .adapterDown(let name):
      return """
        \(name) is down (powered off). Power it on with `earshot scan --bring-up` \
        (needs CAP_NET_ADMIN), `bluetoothctl power on` or `hciconfig \(name) up`.
        """
    case .blocked(let name):
      return "\(name) is blocked by rfkill. Unblock it: `rfkill unblock bluetooth`."
    case .missingCapability(let name, let needs, let during):
      let exe = Self.executablePath()
      return """
        \(during) on \(name) was refused: raw HCI access needs \(needs). Run as root, or grant \
        the capabilities to the binary once:
          sudo setcap cap_net_raw,cap_net_admin+eip \(exe)
        or, under systemd, in the unit's [Service] section:
          AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN
        """
    case .noLEScanning(let name):
      return """
        \(name) does not support LE scanning (its Supported Commands list neither the legacy \
        nor the extended scan commands). Use an LE-capable adapter (--adapter), or force \
        --legacy/--extended to try anyway.
        """
    case .commandFailed(let name, let op, let status):
      return ScanFailure.refused(adapter: name, op, status).reason
    case .timeout(let name, let op):
      return "\(name) did not answer \(op.name) in time. The controller may be hung: "
        + "power-cycle it (`hciconfig \(name) reset`, or replug)."
    case .adapterGone(let name):
      return "\(name) disappeared while starting. Plug it back in and try again."
    case .system(let name, let e):
      return "\(name): \(e)"
    }
  }

  /// What the supervisor needs to know of it.
  public var failure: ScanFailure {
    switch self {
    case .noAdapter: ScanFailure(.noAdapter, reason: description)
    case .noSuchAdapter, .adapterGone: ScanFailure(.gone, reason: description)
    case .adapterDown: ScanFailure(.down, reason: description)
    case .missingCapability, .badAdapterName: ScanFailure(.permanent, reason: description)
    case .commandFailed(let name, let op, let status): .refused(adapter: name, op, status)
    default: ScanFailure(.other, reason: description)
    }
  }

  /// This program's path, for the setcap line.
  static func executablePath() -> String {
    var buffer = [UInt8](repeating: 0, count: 4096)
    let n = buffer.withUnsafeMutableBytes {
      readlink("/proc/self/exe", $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count)
    }
    return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : "/usr/local/bin/earshot"
  }
}
