#if canImport(Glibc)
  import Glibc
#endif

/// Sound-server plugins start threads of their own when a device opens
/// (PipeWire's ALSA plugins do, at `snd_ctl_open`/`snd_pcm_open`). A thread
/// inherits the signal mask of its creator, and the kernel hands a
/// process signal to any thread that does not block it: a plugin thread
/// created before an `EventLoop` blocked SIGTERM then takes SIGTERM's
/// default action and the process dies instead of reading it from its
/// signalfd. Opening with every signal blocked keeps those threads out of
/// signal delivery for good; the caller's own mask is restored afterwards.
enum LibraryThreads {
  static func withSignalsBlocked<T>(_ body: () throws -> T) rethrows -> T {
    // Every ALSA open passes here: its diagnostics are ours from the first.
    ALSADiagnostics.install()
    var all = sigset_t()
    var previous = sigset_t()
    sigfillset(&all)
    pthread_sigmask(SIG_BLOCK, &all, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    return try body()
  }
}
