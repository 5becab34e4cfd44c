#if canImport(Glibc)
  import Glibc
#endif

extension EventLoop {
  /// Watches a set of poll descriptors as ALSA hands them out
  /// (`AlertPlayer.pollDescriptors()`, `Mixer.pollDescriptors()`): when
  /// any fires, `ready` gets the whole set with that descriptor's revents
  /// filled in from the epoll bits (the poll and epoll bits are the same
  /// for IN, OUT, ERR and HUP), ready for ALSA's revents demangling.
  public func watch(pollDescriptors fds: [pollfd], _ ready: @escaping ([pollfd]) -> Void) throws {
    for (i, fd) in fds.enumerated() {
      try watch(FileDescriptor(rawValue: fd.fd), events: UInt32(UInt16(bitPattern: fd.events))) {
        bits in
        var set = fds
        set[i].revents = Int16(truncatingIfNeeded: bits)
        ready(set)
      }
    }
  }

  public func unwatch(pollDescriptors fds: [pollfd]) {
    for fd in fds { unwatch(FileDescriptor(rawValue: fd.fd)) }
  }
}
