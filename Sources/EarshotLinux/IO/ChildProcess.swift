import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Runs a program (no shell) on the event loop and reports once when it has
/// finished: its exit status and what it printed (stdout and stderr
/// together, bounded). Its output pipe is watched; end-of-file means it
/// is done (it is then reaped without blocking). A deadline kills its
/// whole process group. Used for `[shutter] capture_command` and
/// `dbus-send`.
public final class ChildProcess {
  public struct Result: Sendable {
    /// Exit status, or nil when it was killed by a signal (or the timeout).
    public let status: Int32?
    public let timedOut: Bool
    public let output: String
  }

  public let argv: [String]
  public private(set) var pid: pid_t = 0
  private let loop: EventLoop
  /// The read end of the child's output while it is open.
  private var pipeFD: FileDescriptor?
  private var output: [UInt8] = []
  private var timer: EventLoop.TimerID?
  private var timedOut = false
  private var done: ((Result) -> Void)?
  private static let maxOutput = 16 * 1024

  /// Starts `argv`; `environment` is added to ours. Throws when it cannot
  /// start (not installed, not executable).
  public init(
    _ argv: [String], environment: [(String, String)] = [], timeout: Double, loop: EventLoop,
    done: @escaping (Result) -> Void
  ) throws {
    precondition(!argv.isEmpty)
    self.argv = argv
    self.loop = loop
    self.done = done
    let pipe = try FileDescriptor.pipe()
    let result = Spawn.start(
      argv, environment: Spawn.environment(adding: environment), output: pipe.write.rawValue)
    pipe.write.close()
    let child: pid_t
    switch result {
    case .success(let p): child = p
    case .failure(let e):
      pipe.read.close()
      throw e
    }
    pid = child
    pipeFD = pipe.read
    pipe.read.setNonblocking()
    try loop.watch(pipe.read, events: EventLoop.readable) { [weak self] _ in self?.readable() }
    timer = loop.after(seconds: timeout) { [weak self] in self?.expire() }
  }

  private func readable() {
    guard let fd = pipeFD else { return }
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let read: Int?
      do { read = try chunk.withUnsafeMutableBytes { try fd.read(into: $0) } } catch { read = 0 }
      guard let n = read else { return }  // nothing more now
      if n > 0 {
        if output.count < ChildProcess.maxOutput {
          output.append(contentsOf: chunk[0..<min(n, ChildProcess.maxOutput - output.count)])
        }
        continue
      }
      // End of file (or a broken pipe): the child is done with its output.
      closeOutput()
      reap()
      return
    }
  }

  private func closeOutput() {
    guard let fd = pipeFD else { return }
    loop.unwatch(fd)
    fd.close()
    pipeFD = nil
  }

  /// Collects the exit status; re-checks shortly if the child closed its
  /// output but has not exited yet.
  private func reap() {
    guard done != nil else { return }
    var status: Int32 = 0
    let r = waitpid(pid, &status, WNOHANG)
    if r == 0 {
      loop.after(seconds: 0.02) { [weak self] in self?.reap() }
      return
    }
    if let timer { loop.cancel(timer) }
    timer = nil
    let exited = r == pid && (status & 0x7F) == 0
    let code: Int32? = exited ? (status >> 8) & 0xFF : nil
    let finish = done
    done = nil
    finish?(
      Result(
        status: code, timedOut: timedOut,
        output: String(decoding: output, as: UTF8.self)))
  }

  private func expire() {
    timer = nil
    guard done != nil else { return }
    timedOut = true
    kill(-pid, SIGKILL)  // the whole group: whatever it started too
    if pipeFD == nil { reap() }  // else end-of-file follows the kill
  }

  /// Kills it without reporting (the owner lost interest).
  public func cancel() {
    done = nil
    if let timer { loop.cancel(timer) }
    timer = nil
    closeOutput()
    kill(-pid, SIGKILL)
    var status: Int32 = 0
    _ = waitpid(pid, &status, 0)
  }
}
