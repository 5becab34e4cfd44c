import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Where bluetoothd keeps bonds, and where the exported keys go.
public enum BondPaths {
  public static let store = "/var/lib/bluetooth"
  /// Written by `earshot keys export` (earshot-keys.service), read by the agent.
  public static let keysFile = "/run/earshot-keys/bonded-keys"
  /// The group the exported keys file is readable by: the group bluetoothd's
  /// D-Bus policy already trusts to pair and connect devices.
  public static let keysGroup = "bluetooth"
}

/// What could not be read, said so the user knows what to run or grant.
public struct BondStoreError: Error, CustomStringConvertible, Equatable {
  public let description: String
  public let errno: Int32
  public init(_ description: String, errno: Int32 = 0) {
    self.description = description
    self.errno = errno
  }
}

/// The devices of a bond store or keys file, and the problems met on the
/// way (one line each; a device with a problem is left out, the rest kept).
public struct BondedKeySet: Equatable, Sendable {
  public var keys: [BondedKey]
  public var problems: [String]
  public init(keys: [BondedKey] = [], problems: [String] = []) {
    self.keys = keys
    self.problems = problems
  }
}

/// Reads BlueZ's bond store (`root/<adapter>/<device>/info`) into bonded
/// keys: lists the directories, reads each `info` with libinih and lets
/// the core (`BlueZBondStore`) interpret it. A device bonded on two
/// adapters is listed once.
public enum BondStoreReader {
  /// More than anyone bonds; the rest are reported and left out.
  public static let maxDevices = BondedKeysFile.maxDevices
  /// bluetoothd's info files are a few kilobytes; a bigger one is not read.
  public static let maxInfoBytes = 256 * 1024

  public static func read(root: String = BondPaths.store) throws(BondStoreError) -> BondedKeySet {
    let adapters: [String]
    do {
      adapters = try directoryNames(root)
    } catch {
      throw unreadable(root, error.errno)
    }
    var set = BondedKeySet()
    var seen: Set<BDAddress> = []
    for adapter in adapters.sorted()
    where BlueZBondStore.deviceAddress(directoryName: adapter) != nil {
      let adapterPath = root + "/" + adapter
      let devices: [String]
      do {
        devices = try directoryNames(adapterPath)
      } catch {
        throw unreadable(adapterPath, error.errno)
      }
      for device in devices.sorted() {
        guard let address = BlueZBondStore.deviceAddress(directoryName: device),
          !seen.contains(address)
        else { continue }
        let path = adapterPath + "/" + device + "/info"
        guard set.keys.count < maxDevices else {
          set.problems.append(
            "\(path): more than \(maxDevices) bonded devices; the rest are ignored")
          return set
        }
        do {
          guard let bytes = try readBounded(path) else { continue }
          let doc = IniReader.parse(bytes, file: path)
          if let key = try BlueZBondStore.bondedKey(address: address, info: doc) {
            set.keys.append(key)
            seen.insert(address)
          }
        } catch let e as ConfigError {
          set.problems.append(e.description)
        } catch let e as SystemError where e.errno == EACCES || e.errno == EPERM {
          throw unreadable(path, e.errno)
        } catch {
          set.problems.append("\(error)")
        }
      }
    }
    return set
  }

  static func unreadable(_ path: String, _ code: Int32) -> BondStoreError {
    if code == EACCES || code == EPERM {
      return BondStoreError(
        "cannot read BlueZ's bond store \(path) (only root can): run 'sudo earshot keys export', "
          + "or 'sudo systemctl enable --now earshot-keys.service' so the agent gets the keys in "
          + "\(BondPaths.keysFile)", errno: code)
    }
    if code == ENOENT {
      return BondStoreError("no BlueZ bond store at \(path) (is bluez installed?)", errno: code)
    }
    return BondStoreError(
      "cannot read BlueZ's bond store \(path): \(String(cString: strerror(code)))", errno: code)
  }

  /// The bytes of `path`, nil when it does not exist (a device directory
  /// without an info file yet), refused when larger than `maxInfoBytes`.
  static func readBounded(_ path: String) throws -> [UInt8]? {
    var st = stat()
    guard stat(path, &st) == 0 else {
      if errno == ENOENT { return nil }
      throw SystemError(errno: errno, "cannot read \(path)")
    }
    guard st.st_size <= maxInfoBytes else {
      throw SystemError(errno: EFBIG, "cannot read \(path) (over \(maxInfoBytes) bytes)")
    }
    return try FileBytes(path: path).bytes
  }

  /// The names in a directory (without . and ..).
  public static func directoryNames(_ path: String) throws(SystemError) -> [String] {
    guard let dir = opendir(path) else { throw SystemError(errno: errno, "cannot list \(path)") }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }
}

/// Reads and writes the keys file (`BondedKeysFile`).
public enum BondedKeysFileIO {
  public static let maxBytes = 1 << 20

  /// The devices the keys file at `path` lists; problems name file and line.
  public static func read(path: String) throws(BondStoreError) -> BondedKeySet {
    var st = stat()
    guard stat(path, &st) == 0 else { throw missing(path, errno) }
    guard st.st_size <= maxBytes else {
      throw BondStoreError("\(path) is over \(maxBytes) bytes; not a keys file")
    }
    let bytes: [UInt8]
    do {
      bytes = try FileBytes(path: path).bytes
    } catch let e as SystemError {
      throw missing(path, e.errno)
    } catch {
      throw BondStoreError("cannot read \(path): \(error)")
    }
    let (keys, errors) = BondedKeysFile.parse(IniReader.parse(bytes, file: path))
    return BondedKeySet(keys: keys, problems: errors.map(\.description))
  }

  static func missing(_ path: String, _ code: Int32) -> BondStoreError {
    if code == ENOENT {
      return BondStoreError(
        "no keys file at \(path): run 'sudo systemctl enable --now earshot-keys.service' "
          + "(or 'sudo earshot keys export --output \(path)') so bonded devices' keys are exported",
        errno: code)
    }
    if code == EACCES || code == EPERM {
      return BondStoreError(
        "cannot read the keys file \(path): it is readable by group '\(BondPaths.keysGroup)'; "
          + "add this user to it ('sudo adduser $USER \(BondPaths.keysGroup)', then log in again)",
        errno: code)
    }
    return BondStoreError("cannot read \(path): \(String(cString: strerror(code)))", errno: code)
  }

  /// Writes `text` to `path` atomically (a temporary file renamed over it),
  /// mode 0640, group `group` when given (by name or number). Unchanged
  /// contents are not rewritten, so followers are not woken for nothing.
  /// Returns whether the file changed.
  @discardableResult
  public static func write(_ text: String, to path: String, group: String?) throws(BondStoreError)
    -> Bool
  {
    let bytes = Array(text.utf8)
    if let old = try? FileBytes(path: path).bytes, old == bytes, let group {
      // Same keys; still make sure the group is right (it may have changed).
      var st = stat()
      if stat(path, &st) == 0, let gid = groupID(group), st.st_gid == gid { return false }
    }
    let gid: gid_t?
    if let group {
      guard let id = groupID(group) else {
        throw BondStoreError("no group '\(group)' on this machine (give --group NAME)")
      }
      gid = id
    } else {
      gid = nil
    }
    let temporary = path + ".new"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else {
      throw BondStoreError(
        "cannot write \(temporary): \(String(cString: strerror(errno)))", errno: errno)
    }
    var failure: Int32 = 0
    let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    if written != bytes.count { failure = errno == 0 ? EIO : errno }
    if failure == 0, let gid, fchown(fd, uid_t.max, gid) != 0 {
      failure = errno
    }
    if failure == 0, fchmod(fd, 0o640) != 0 { failure = errno }
    if failure == 0, fsync(fd) != 0 { failure = errno }
    close(fd)
    if failure == 0, rename(temporary, path) != 0 { failure = errno }
    guard failure == 0 else {
      unlink(temporary)
      throw BondStoreError(
        "cannot write \(path): \(String(cString: strerror(failure)))", errno: failure)
    }
    return true
  }

  static func groupID(_ group: String) -> gid_t? {
    if let number = gid_t(group) { return number }
    guard let entry = getgrnam(group) else { return nil }
    return entry.pointee.gr_gid
  }
}
