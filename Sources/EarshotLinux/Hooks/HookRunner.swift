import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Runs on_enter/on_exit hooks with posix_spawn (no shell), each in its own
/// process group so a timeout kills whatever it started. Never waits: the
/// caller's loop calls `reap(now:)` on SIGCHLD or at `nextDeadline`, and
/// finished or overdue hooks are collected with waitpid(WNOHANG).
public final class HookRunner {
  public struct Running {
    public let pid: pid_t
    public let label: String
    public let deadline: MonotonicTime
    public var killed = false
  }

  /// Receives one line per hook outcome (started, exit status, timeout).
  public var log: (String) -> Void
  // One thread (the agent's loop) uses a runner: no run-time exclusivity
  // check on a property read after every report.
  @exclusivity(unchecked) public private(set) var running: [Running] = []

  public init(log: @escaping (String) -> Void) { self.log = log }

  /// Starts `argv` with `environment` added to ours; `timeout` in seconds
  /// of the monotonic clock.
  public func spawn(
    _ argv: [String], environment: [(String, String)], timeout: Double, label: String,
    now: MonotonicTime = Clock.now()
  ) {
    let env = Spawn.environment(adding: environment)
    let pid: pid_t
    switch Spawn.start(argv, environment: env) {
    case .success(let p): pid = p
    case .failure(let e):
      log("\(label): cannot run \(argv[0]): \(String(cString: strerror(e.errno)))")
      return
    }
    running.append(
      Running(pid: pid, label: label, deadline: now.adding(seconds: timeout)))
  }

  /// Collects finished hooks and kills overdue ones; never blocks.
  /// With none running it reads no clock: the monitor calls it after
  /// every report.
  public func reap() {
    guard !running.isEmpty else { return }
    reap(now: Clock.now())
  }

  public func reap(now: MonotonicTime) {
    var still: [Running] = []
    for var r in running {
      var status: Int32 = 0
      let got = waitpid(r.pid, &status, WNOHANG)
      if got == r.pid {
        log("\(r.label): \(Self.describe(status))" + (r.killed ? " (timed out)" : ""))
        continue
      }
      if got < 0 {
        log("\(r.label): lost track of pid \(r.pid): \(String(cString: strerror(errno)))")
        continue
      }
      if now >= r.deadline && !r.killed {
        // The whole process group: a hook's own children go too.
        kill(-r.pid, SIGKILL)
        r.killed = true
      }
      still.append(r)
    }
    running = still
  }

  /// When `reap` must run next even without SIGCHLD (the earliest timeout).
  public var nextDeadline: MonotonicTime? {
    running.filter { !$0.killed }.map(\.deadline).min()
  }

  /// Waits for every running hook, killing those past their timeout. For
  /// the end of a replay, when there is no more scanning to keep going.
  public func finish() {
    while !running.isEmpty {
      reap()
      if running.isEmpty { break }
      var ts = timespec(tv_sec: 0, tv_nsec: 10_000_000)
      nanosleep(&ts, nil)
    }
  }

  static func describe(_ status: Int32) -> String {
    let sig = status & 0x7F
    if sig == 0 { return "exited with status \((status >> 8) & 0xFF)" }
    return "killed by signal \(sig)"
  }
}
