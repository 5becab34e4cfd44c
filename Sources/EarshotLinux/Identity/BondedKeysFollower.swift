import CSystemd
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Where the bonded keys come from: BlueZ's store itself (root only) or
/// the keys file `earshot keys export` writes for an unprivileged agent.
public enum BondedKeysSource: Equatable, Sendable, CustomStringConvertible {
  case store(root: String)
  case keysFile(path: String)

  public var description: String {
    switch self {
    case .store(let root): "BlueZ's bond store \(root)"
    case .keysFile(let path): "the keys file \(path)"
    }
  }

  public func read() throws(BondStoreError) -> BondedKeySet {
    switch self {
    case .store(let root): try BondStoreReader.read(root: root)
    case .keysFile(let path): try BondedKeysFileIO.read(path: path)
    }
  }

  /// The agent's source: `$EARSHOT_BOND_STORE` or `$EARSHOT_KEYS_FILE` when
  /// set (tests, a second agent); else the store when running as root,
  /// else the exported keys file.
  public static func forAgent() -> BondedKeysSource {
    if let root = ConfigLocation.env("EARSHOT_BOND_STORE"), !root.isEmpty {
      return .store(root: root)
    }
    if let path = ConfigLocation.env("EARSHOT_KEYS_FILE"), !path.isEmpty {
      return .keysFile(path: path)
    }
    // Root reads the store itself; anyone else, even where the top
    // directory is open, meets 0700 adapter directories below it.
    if geteuid() == 0, access(BondPaths.store, F_OK) == 0 { return .store(root: BondPaths.store) }
    return .keysFile(path: BondPaths.keysFile)
  }
}

/// Follows a `BondedKeysSource` with inotify and hands over the whole key
/// set whenever it changes: a device paired or removed while running is
/// picked up without a restart.
///
/// For the store it watches the store, each adapter directory and each
/// device directory (bluetoothd replaces `info` by a rename inside the
/// device directory, and inotify is not recursive), and re-reads after the
/// writes settle (pairing rewrites `info` several times in a row). For the
/// keys file it watches the file's directory. A directory that is missing
/// (the exporter not started yet) is looked for again every `retry`
/// seconds.
public final class BondedKeysFollower {
  public let source: BondedKeysSource
  public let settle: Double
  public let retry: Double
  /// The last set handed over (nil until one was read).
  public private(set) var current: BondedKeySet?
  /// The last failure, kept so it is reported once, not at every retry.
  public private(set) var failure: BondStoreError?
  private let loop: EventLoop
  private let changed: (BondedKeySet) -> Void
  private let failed: (BondStoreError) -> Void
  private var inotify: FileDescriptor?
  private var watches: [Int32] = []
  private var pending: EventLoop.TimerID?

  public init(
    source: BondedKeysSource, loop: EventLoop, settle: Double = 0.3, retry: Double = 2,
    changed: @escaping (BondedKeySet) -> Void, failed: @escaping (BondStoreError) -> Void
  ) {
    self.source = source
    self.loop = loop
    self.settle = settle
    self.retry = retry
    self.changed = changed
    self.failed = failed
  }

  deinit { stop() }

  /// Reads once now and starts following.
  public func start() throws {
    let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    guard fd >= 0 else { throw SystemError(errno: errno, "inotify_init1") }
    let descriptor = FileDescriptor(rawValue: fd)
    inotify = descriptor
    try loop.watch(descriptor) { [unowned self] _ in self.drain() }
    reload()
  }

  public func stop() {
    if let pending { loop.cancel(pending) }
    pending = nil
    if let inotify {
      loop.unwatch(inotify)
      inotify.close()
    }
    inotify = nil
  }

  /// Re-arms the watches, then reads (in that order, so a change made
  /// while reading still wakes us).
  public func reload() {
    pending = nil
    let complete = rewatch()
    do {
      let set = try source.read()
      failure = nil
      if set != current {
        current = set
        changed(set)
      }
    } catch {
      if error != failure {
        failure = error
        failed(error)
      }
    }
    if !complete { schedule(after: retry) }
  }

  private func schedule(after seconds: Double) {
    guard pending == nil else { return }
    pending = loop.after(seconds: seconds) { [unowned self] in self.reload() }
  }

  private func drain() {
    guard let inotify else { return }
    var buffer = [UInt8](repeating: 0, count: 4096)
    var any = false
    while true {
      let n = buffer.withUnsafeMutableBytes {
        Glibc.read(inotify.rawValue, $0.baseAddress, $0.count)
      }
      if n <= 0 { break }
      any = true
    }
    // Which file changed does not matter: the whole set is read again.
    if any { schedule(after: settle) }
  }

  /// Watches the directories the source lives in; false when one is
  /// missing (to be looked for again).
  private func rewatch() -> Bool {
    guard let inotify else { return false }
    for wd in watches { inotify_rm_watch(inotify.rawValue, wd) }
    watches.removeAll()
    let mask = UInt32(
      IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_ATTRIB
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
    func add(_ path: String) -> Bool {
      let wd = inotify_add_watch(inotify.rawValue, path, mask)
      guard wd >= 0 else { return false }
      watches.append(wd)
      return true
    }
    switch source {
    case .keysFile(let path):
      let slash = path.lastIndex(of: "/")
      let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
      return add(directory)
    case .store(let root):
      guard add(root) else { return false }
      let adapters = (try? BondStoreReader.directoryNames(root)) ?? []
      for adapter in adapters where BlueZBondStore.deviceAddress(directoryName: adapter) != nil {
        let adapterPath = root + "/" + adapter
        _ = add(adapterPath)
        for device in (try? BondStoreReader.directoryNames(adapterPath)) ?? []
        where BlueZBondStore.deviceAddress(directoryName: device) != nil {
          _ = add(adapterPath + "/" + device)
        }
      }
      return true
    }
  }
}

/// Tells systemd a `Type=notify` service is ready (no-op outside systemd).
public enum ServiceReadiness {
  public static func ready() {
    _ = sd_notify(0, "READY=1")
  }
}
