import CALSA
import Synchronization

/// ALSA's own diagnostics, kept instead of printed. Without a handler the
/// library writes lines such as "ALSA lib confmisc.c:855:(parse_card)
/// cannot find card '0'" to stderr itself, eight of them before Earshot's
/// own error on a machine with no sound card. Installed before the first
/// open (`LibraryThreads.withSignalsBlocked`, which the PCM and mixer
/// opens go through; later control opens find it installed); the last few lines stay here for a caller that wants them as
/// detail (the CLI with EARSHOT_DEBUG set).
public enum ALSADiagnostics {
  /// Lines kept, at most: the last ones say what the last open tripped on.
  public static let capacity = 8

  private static let lines = Mutex<[String]>([])

  private static let installed: Void = {
    _ = earshot_alsa_set_log { text in
      guard let text else { return }
      ALSADiagnostics.keep(String(cString: text))
    }
  }()

  /// Routes ALSA's diagnostics here; once per process, later calls do nothing.
  public static func install() { _ = installed }

  /// The kept lines, oldest first.
  public static func recent() -> [String] { lines.withLock { $0 } }

  static func keep(_ line: String) {
    lines.withLock { kept in
      if kept.count >= capacity { kept.removeFirst(kept.count - capacity + 1) }
      kept.append(line)
    }
  }
}
