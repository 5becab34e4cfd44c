import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Where photos go and what they are called: `[shutter] directory`, else
/// $XDG_PICTURES_DIR/Earshot (from the environment or user-dirs.dirs),
/// else ~/Pictures/Earshot; names like `earshot-20260101-093015-042.jpg`
/// (local time, milliseconds), never overwriting an existing file.
public struct PhotoStore {
  public let directory: String

  public init(configured: String?) {
    if let configured {
      directory = Environment.expand(configured)
    } else {
      directory = PhotoStore.picturesDirectory() + "/Earshot"
    }
  }

  static func picturesDirectory() -> String {
    if let p = Environment.get("XDG_PICTURES_DIR"), !p.isEmpty { return Environment.expand(p) }
    let config =
      Environment.get("XDG_CONFIG_HOME").flatMap { $0.isEmpty ? nil : $0 }
      ?? Environment.home + "/.config"
    if let file = try? FileBytes(path: config + "/user-dirs.dirs") {
      for line in String(decoding: file.bytes, as: UTF8.self).split(separator: "\n") {
        guard line.hasPrefix("XDG_PICTURES_DIR=") else { continue }
        var value = line.dropFirst("XDG_PICTURES_DIR=".count)
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
          value = value.dropFirst().dropLast()
        }
        if !value.isEmpty { return Environment.expand(String(value)) }
      }
    }
    return Environment.home + "/Pictures"
  }

  /// Creates the directory (and its parents) when missing.
  public func ensureDirectory() throws {
    var path = ""
    for part in directory.split(separator: "/") {
      path += "/" + part
      if mkdir(path, 0o755) != 0 && errno != EEXIST {
        throw SystemError(errno: errno, "cannot create photo directory \(path)")
      }
    }
  }

  /// A fresh timestamped path for a photo taken now.
  public func nextPath() -> String {
    let micros = Clock.realtimeMicros()
    var t = time_t(micros / 1_000_000)
    var tm = tm()
    localtime_r(&t, &tm)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    let ms = Int(micros / 1000 % 1000)
    let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
    let stamp =
      "\(tm.tm_year + 1900)\(two(tm.tm_mon + 1))\(two(tm.tm_mday))-"
      + "\(two(tm.tm_hour))\(two(tm.tm_min))\(two(tm.tm_sec))-\(msText)"
    var path = "\(directory)/earshot-\(stamp).jpg"
    var n = 2
    while access(path, F_OK) == 0 {
      path = "\(directory)/earshot-\(stamp)-\(n).jpg"
      n += 1
    }
    return path
  }

  /// Writes the photo whole or not at all (temporary file, then rename).
  public func write(_ bytes: [UInt8], to path: String) throws {
    let tmp = path + ".part"
    let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw SystemError(errno: errno, "cannot create \(tmp)") }
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if n < 0 {
        if errno == EINTR { continue }
        let e = errno
        close(fd)
        unlink(tmp)
        throw SystemError(errno: e, "cannot write \(tmp)")
      }
      offset += n
    }
    guard close(fd) == 0, rename(tmp, path) == 0 else {
      let e = errno
      unlink(tmp)
      throw SystemError(errno: e, "cannot save \(path)")
    }
  }
}
