import CSndFile
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// Builds the media library from a folder: every audio file below it
/// (symbolic links to folders are not followed, so loops cannot happen),
/// with its title and artist tags where libsndfile reads them
/// (SF_STR_TITLE, SF_STR_ARTIST: WAV INFO chunks, FLAC and Ogg Vorbis
/// comments, AIFF...), else its file name. Files libsndfile cannot open
/// (AAC, WMA...) are indexed by name, marked not decodable.
public enum MediaScanner {
  public struct Result {
    public var library = MediaLibrary()
    /// Folders that could not be read, with why.
    public var problems: [String] = []
  }

  /// Scans `root` (with `~` expanded). A missing root is a problem, not
  /// an error: the library is then empty and every request `notFound`.
  public static func scan(_ root: String, maxFiles: Int = 100_000) -> Result {
    var result = Result()
    var folders = [Environment.expand(root)]
    var files: [String] = []
    while let folder = folders.popLast(), files.count < maxFiles {
      guard let dir = opendir(folder) else {
        result.problems.append("cannot read \(folder): \(String(cString: strerror(errno)))")
        continue
      }
      while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
          String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name.hasPrefix(".") { continue }  // ., .., hidden files
        let path = folder == "/" ? "/" + name : folder + "/" + name
        var st = stat()
        guard lstat(path, &st) == 0 else { continue }
        switch st.st_mode & S_IFMT {
        case S_IFDIR: folders.append(path)
        case S_IFREG, S_IFLNK:
          if MediaItem.isAudioFile(path) { files.append(path) }
        default: break
        }
      }
      closedir(dir)
    }
    files.sort()
    for path in files { result.library.add(item(path)) }
    return result
  }

  /// One file: opened with libsndfile for its tags.
  public static func item(_ path: String) -> MediaItem {
    var info = SF_INFO()
    guard let f = sf_open(path, Int32(SFM_READ), &info) else {
      return MediaItem(path: path, title: nil, artist: nil, decodable: false)
    }
    defer { sf_close(f) }
    let title = sf_get_string(f, Int32(SF_STR_TITLE)).map { String(cString: $0) }
    let artist = sf_get_string(f, Int32(SF_STR_ARTIST)).map { String(cString: $0) }
    return MediaItem(path: path, title: title, artist: artist, decodable: true)
  }
}
