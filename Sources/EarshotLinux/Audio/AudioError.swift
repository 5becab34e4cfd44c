import CALSA

#if canImport(Glibc)
  import Glibc
#endif

/// An ALSA call that failed on a named device, with the reason in words
/// and what to try. ALSA error codes are negative errno values.
public struct AudioDeviceError: Error, CustomStringConvertible, Equatable {
  public let device: String
  /// What was being done: "open", "configure", "play".
  public let action: String
  public let code: Int32

  public init(device: String, action: String, code: Int32) {
    self.device = device
    self.action = action
    self.code = code
  }

  public var reason: String { String(cString: snd_strerror(code)) }

  /// Where the reason alone does not say what to do.
  public var hint: String? {
    switch -code {
    case EBUSY:
      return
        "another program is using it; close that program or use a shared device such as 'default'"
    case ENOENT, ENODEV, ENXIO:
      return "no such device here; 'aplay -L' lists the devices (is the sound server running?)"
    case EACCES, EPERM:
      return "no permission; add the user to the 'audio' group"
    case EINVAL:
      return "it does not take 16-bit PCM at this rate; try its 'plughw:' form"
    default:
      return nil
    }
  }

  public var description: String {
    var s = "cannot \(action) audio device '\(device)': \(reason)"
    if let hint { s += " (\(hint))" }
    return s
  }
}

/// Every device tried for an alert failed; lists each in the order tried.
public struct AudioOpenFailure: Error, CustomStringConvertible {
  public let attempts: [AudioDeviceError]

  public var description: String {
    if attempts.count == 1 { return attempts[0].description }
    return "no audio device could play: "
      + attempts.map(\.description).joined(separator: "; then ")
  }
}
