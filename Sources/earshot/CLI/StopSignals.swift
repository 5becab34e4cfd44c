import EarshotLinux

#if canImport(Glibc)
  import Glibc
#endif

/// SIGINT and SIGTERM as a readable descriptor (a self-pipe written by the
/// signal handler), so a command's poll loop can stop cleanly (drop the
/// audio, print its last line) instead of dying mid-write.
final class StopSignals {
  let fd: Int32

  init() throws {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw SystemError(errno: errno, "cannot create the signal pipe") }
    for end in ends {
      _ = fcntl(end, F_SETFD, FD_CLOEXEC)
      _ = fcntl(end, F_SETFL, O_NONBLOCK)
    }
    fd = ends[0]
    stopSignalPipe = ends[1]
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { signal in
      var byte = UInt8(truncatingIfNeeded: signal)
      _ = write(stopSignalPipe, &byte, 1)
    }
    sigemptyset(&action.sa_mask)
    action.sa_flags = SA_RESTART
    sigaction(SIGINT, &action, nil)
    sigaction(SIGTERM, &action, nil)
  }

  var pollEntry: pollfd { pollfd(fd: fd, events: Int16(POLLIN), revents: 0) }

  /// The signal number waiting, if any.
  func take() -> Int32? {
    var byte: UInt8 = 0
    return read(fd, &byte, 1) == 1 ? Int32(byte) : nil
  }
}

/// Write end of the signal pipe; set once before the handler is installed.
nonisolated(unsafe) private var stopSignalPipe: Int32 = -1

/// Polls `fds` (retrying on EINTR); returns how many are ready, 0 on timeout.
func pollReady(_ fds: inout [pollfd], timeoutMillis: Int32) throws -> Int32 {
  while true {
    let n = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeoutMillis) }
    if n >= 0 { return n }
    if errno != EINTR { throw SystemError(errno: errno, "poll failed") }
  }
}
