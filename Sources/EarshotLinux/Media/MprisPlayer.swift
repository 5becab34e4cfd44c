import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Forwards play requests to an MPRIS player (`[media] player =
/// org.mpris.MediaPlayer2.NAME`) on the session bus, with `dbus-send`
/// (package dbus-bin) run on the event loop: one short process per call,
/// no D-Bus library and no connection to keep. `OpenUri` accepted counts
/// as started; MPRIS has no "first audio written" signal to wait for.
public final class MprisPlayer {
  public let busName: String
  private let loop: EventLoop
  private let timeout: Double
  private var calls: [ChildProcess] = []

  public init(busName: String, timeout: Double, loop: EventLoop) {
    self.busName = busName
    self.timeout = timeout
    self.loop = loop
  }

  deinit { for c in calls { c.cancel() } }

  public enum Outcome: Equatable {
    case ok
    case failed(MediaResponse, String)
  }

  /// Plays the file: `OpenUri file://...`.
  public func open(path: String, done: @escaping (Outcome) -> Void) {
    call("OpenUri", ["string:" + MprisPlayer.fileURI(path)], done)
  }

  public func pause(done: @escaping (Outcome) -> Void = { _ in }) { call("Pause", [], done) }
  public func play(done: @escaping (Outcome) -> Void = { _ in }) { call("Play", [], done) }
  public func stop(done: @escaping (Outcome) -> Void = { _ in }) { call("Stop", [], done) }

  private func call(_ method: String, _ args: [String], _ done: @escaping (Outcome) -> Void) {
    let ms = max(1, Int(timeout * 1000))
    let argv =
      [
        "dbus-send", "--session", "--print-reply", "--reply-timeout=\(ms)", "--dest=\(busName)",
        "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player.\(method)",
      ] + args
    var child: ChildProcess?
    do {
      child = try ChildProcess(argv, timeout: timeout + 1, loop: loop) { [weak self] result in
        self?.calls.removeAll { $0 === child }
        done(MprisPlayer.outcome(result, self?.busName ?? "", method))
      }
      if let child { calls.append(child) }
    } catch {
      done(.failed(.failure, "\(error) (install dbus-bin for dbus-send)"))
    }
  }

  /// dbus-send's result as a response code: the error names are D-Bus's.
  static func outcome(_ r: ChildProcess.Result, _ bus: String, _ method: String) -> Outcome {
    if r.status == 0 { return .ok }
    let out = r.output.trimmingCharacters()
    if r.timedOut || out.contains("org.freedesktop.DBus.Error.NoReply") {
      return .failed(.timeout, "\(bus) did not answer \(method)")
    }
    if out.contains("org.freedesktop.DBus.Error.ServiceUnknown")
      || out.contains("org.freedesktop.DBus.Error.NameHasNoOwner")
    {
      return .failed(
        .playerNotRunning, "MPRIS player \(bus) is not running (start it, or unset [media] player)")
    }
    if out.contains("NotSupported") || out.contains("InvalidArgs") {
      return .failed(.unsupportedMediaType, "\(bus) cannot play it: \(out)")
    }
    if out.contains("DBUS_SESSION_BUS_ADDRESS") || out.contains("Failed to open connection") {
      return .failed(
        .playerNotRunning, "no D-Bus session bus (is DBUS_SESSION_BUS_ADDRESS set?): \(out)")
    }
    return .failed(.failure, "\(bus) \(method) failed: \(out)")
  }

  /// `file://` URI with every byte outside RFC 3986's unreserved set and
  /// "/" percent-encoded.
  public static func fileURI(_ path: String) -> String {
    var s = "file://"
    for b in path.utf8 {
      switch b {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
        UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
        s.unicodeScalars.append(Unicode.Scalar(b))
      default:
        let hex = Array("0123456789ABCDEF".utf8)
        s += "%"
        s.unicodeScalars.append(Unicode.Scalar(hex[Int(b >> 4)]))
        s.unicodeScalars.append(Unicode.Scalar(hex[Int(b & 15)]))
      }
    }
    return s
  }
}

extension String {
  func trimmingCharacters() -> String {
    let s = unicodeScalars
    guard let a = s.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
    let b = s.lastIndex(where: { !$0.properties.isWhitespace })!
    return String(s[a...b])
  }
}
