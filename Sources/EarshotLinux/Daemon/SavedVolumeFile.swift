import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The file that holds the user's volume while find-phone rings
/// (`SavedVolume`'s text). Written to a temporary file and renamed over, so
/// a kill -9 at any moment leaves either no file or a whole one. Making it
/// durable (fsync, which can take tens of milliseconds on a busy disk) is a
/// separate step that find-phone takes once the alert is sounding: a power
/// loss in those few milliseconds can leave an empty file, which reads as
/// no saved volume.
public struct SavedVolumeFile {
  public let directory: String
  public var path: String { directory + "/find-phone-volume" }

  public init(directory: String) {
    self.directory = directory
  }

  public func save(_ v: VolumeSetting) throws {
    try makeDirectory()
    let tmp = path + ".tmp"
    let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw SystemError(errno: errno, "cannot create \(tmp)") }
    let bytes = Array(SavedVolume.encode(v).utf8)
    let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    let e = errno
    close(fd)
    guard n == bytes.count else {
      unlink(tmp)
      throw SystemError(errno: n < 0 ? e : ENOSPC, "cannot write \(tmp)")
    }
    guard rename(tmp, path) == 0 else { throw SystemError(errno: errno, "cannot rename \(tmp)") }
  }

  /// Flushes the file and its directory entry to disk. Failure leaves the
  /// file as good as before (it only survives process deaths then), so it
  /// is reported, not thrown.
  @discardableResult
  public func makeDurable() -> Bool {
    var ok = false
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd >= 0 {
      ok = fsync(fd) == 0
      close(fd)
    }
    let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if dfd >= 0 {
      ok = fsync(dfd) == 0 && ok
      close(dfd)
    }
    return ok
  }

  /// The saved volume, if a file is there. A file that does not decode is
  /// reported, not trusted.
  public func load() throws -> VolumeSetting? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    let file = try FileBytes(path: path)
    // Renamed into place but never synced before a power loss.
    if file.bytes.isEmpty {
      remove()
      return nil
    }
    guard let v = SavedVolume.decode(String(decoding: file.bytes, as: UTF8.self)) else {
      throw SystemError(
        errno: EINVAL, "\(path) is not a saved volume; delete it if you set the volume yourself")
    }
    return v
  }

  public func remove() {
    unlink(path)
  }

  private func makeDirectory() throws {
    var prefix = directory.hasPrefix("/") ? "" : "."
    for part in directory.split(separator: "/") {
      prefix += "/" + part
      if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
        throw SystemError(errno: errno, "cannot create \(prefix)")
      }
    }
  }
}
