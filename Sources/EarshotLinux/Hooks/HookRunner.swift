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
    public let deadline: UInt64
    public var killed = false
  }

  /// Receives one line per hook outcome (started, exit status, timeout).
  public var log: (String) -> Void
  public private(set) var running: [Running] = []

  public init(log: @escaping (String) -> Void) { self.log = log }

  /// Starts `argv` with `environment` added to ours; `timeout` in seconds
  /// of the monotonic clock.
  public func spawn(
    _ argv: [String], environment: [(String, String)], timeout: Double, label: String,
    now: UInt64 = Clock.monotonicNanos()
  ) {
    var env: [String] = []
    let names = Set(environment.map(\.0))
    var p = environ
    while let entry = p.pointee {
      let s = String(cString: entry)
      if let eq = s.firstIndex(of: "="), !names.contains(String(s[..<eq])) { env.append(s) }
      p += 1
    }
    env += environment.map { "\($0.0)=\($0.1)" }

    var attr = posix_spawnattr_t()
    posix_spawnattr_init(&attr)
    defer { posix_spawnattr_destroy(&attr) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for s in [SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, s) }
    posix_spawnattr_setsigdefault(&attr, &defaults)
    var mask = sigset_t()
    sigemptyset(&mask)
    posix_spawnattr_setsigmask(&attr, &mask)
    posix_spawnattr_setpgroup(&attr, 0)
    posix_spawnattr_setflags(
      &attr, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)

    var pid: pid_t = 0
    let cArgs = argv.map { strdup($0) } + [nil]
    let cEnv = env.map { strdup($0) } + [nil]
    defer {
      for a in cArgs { free(a) }
      for e in cEnv { free(e) }
    }
    let rc = posix_spawnp(&pid, argv[0], &actions, &attr, cArgs, cEnv)
    guard rc == 0 else {
      log("\(label): cannot run \(argv[0]): \(String(cString: strerror(rc)))")
      return
    }
    running.append(
      Running(pid: pid, label: label, deadline: now + UInt64(max(0, timeout) * 1e9)))
  }

  /// Collects finished hooks and kills overdue ones; never blocks.
  public func reap(now: UInt64 = Clock.monotonicNanos()) {
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
  public var nextDeadline: UInt64? {
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
