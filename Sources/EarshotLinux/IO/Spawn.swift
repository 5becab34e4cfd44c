#if canImport(Glibc)
  import Glibc
#endif

/// Starts a program without a shell (hooks, capture commands, helper
/// tools): in its own process group, so a timeout can kill all it started;
/// with default signal dispositions and an empty signal mask, because the
/// event loop blocks signals for its signalfd and a child must not inherit
/// that; stdin from /dev/null.
enum Spawn {
  /// Our environment with `extra` added (replacing variables of the same name).
  static func environment(adding extra: [(String, String)]) -> [String] {
    var env: [String] = []
    let names = Set(extra.map(\.0))
    var p = environ
    while let entry = p.pointee {
      let s = String(cString: entry)
      if let eq = s.firstIndex(of: "="), !names.contains(String(s[..<eq])) { env.append(s) }
      p += 1
    }
    return env + extra.map { "\($0.0)=\($0.1)" }
  }

  /// posix_spawnp; `output`, when given, becomes the child's stdout and
  /// stderr. Returns the pid, or the errno of the failure.
  static func start(_ argv: [String], environment: [String], output: Int32? = nil) -> Result<
    pid_t, SystemError
  > {
    var attr = posix_spawnattr_t()
    posix_spawnattr_init(&attr)
    defer { posix_spawnattr_destroy(&attr) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for s in [SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2] {
      sigaddset(&defaults, s)
    }
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
    if let output {
      posix_spawn_file_actions_adddup2(&actions, output, 1)
      posix_spawn_file_actions_adddup2(&actions, output, 2)
    }
    let cArgs = argv.map { strdup($0) } + [nil]
    let cEnv = environment.map { strdup($0) } + [nil]
    defer {
      for a in cArgs { free(a) }
      for e in cEnv { free(e) }
    }
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, argv[0], &actions, &attr, cArgs, cEnv)
    return rc == 0 ? .success(pid) : .failure(SystemError(errno: rc, "cannot run \(argv[0])"))
  }
}
