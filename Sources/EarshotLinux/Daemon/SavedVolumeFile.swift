import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// The file that holds the user's volume while find-phone rings
/// (`SavedVolume`'s text). Written atomically and synced before the volume
/// is raised, so a kill -9 at any moment leaves either no file or a whole one.
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
    let synced = fsync(fd) == 0
    close(fd)
    guard n == bytes.count, synced else {
      unlink(tmp)
      throw SystemError(errno: errno, "cannot write \(tmp)")
    }
    guard rename(tmp, path) == 0 else { throw SystemError(errno: errno, "cannot rename \(tmp)") }
    let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if dfd >= 0 {
      _ = fsync(dfd)
      close(dfd)
    }
  }

  /// The saved volume, if a file is there. A file that does not decode is
  /// reported, not trusted.
  public func load() throws -> VolumeSetting? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    let file = try FileBytes(path: path)
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
