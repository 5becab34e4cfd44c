import CV4L2
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// One camera through Video4Linux2, straight ioctls: open and prepare
/// (QUERYCAP, a format the device offers that we can turn into JPEG:
/// YUYV or MJPEG), then one frame per capture, by mmap streaming
/// (REQBUFS/QBUF/DQBUF) where the driver streams, else by read().
///
/// Nonblocking: `startFrame()` queues the buffers and starts the stream;
/// the owner waits for `fd` to be readable (epoll) and calls
/// `readFrame()`, which returns the frame once `warmup` frames have gone
/// by (webcams adjust exposure over their first frames).
public final class V4L2Camera {
  public enum PixelFormat: Sendable, Equatable {
    case yuyv
    case mjpeg

    public var name: String { self == .yuyv ? "YUYV" : "MJPEG" }
  }

  public struct Frame {
    public let format: PixelFormat
    public let width: Int
    public let height: Int
    /// Bytes per row (YUYV); 0 for MJPEG.
    public let stride: Int
    public let bytes: [UInt8]

    public init(format: PixelFormat, width: Int, height: Int, stride: Int, bytes: [UInt8]) {
      self.format = format
      self.width = width
      self.height = height
      self.stride = stride
      self.bytes = bytes
    }
  }

  public let path: String
  private var fd: Int32 = -1
  public private(set) var card = ""
  public private(set) var driver = ""
  public private(set) var format: PixelFormat = .yuyv
  public private(set) var width = 0
  public private(set) var height = 0
  private var stride = 0
  private var sizeImage = 0
  private var streaming = false  // the driver does mmap streaming
  private var streamOn = false
  private var buffers: [(pointer: UnsafeMutableRawPointer, length: Int)] = []
  private var framesToSkip = 0

  /// The open device, for the owner's loop to watch; nil while closed.
  public var descriptor: FileDescriptor? { fd >= 0 ? FileDescriptor(rawValue: fd) : nil }

  public init(path: String) {
    self.path = path
  }

  deinit { close() }

  /// Opens and prepares the camera; throws a `CameraFailure` that names
  /// the device and says what to do.
  public func open(width wantWidth: Int = 0, height wantHeight: Int = 0) throws {
    fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { throw CameraError(V4L2Camera.failure(errno, path, "open")) }
    do {
      try prepare(wantWidth, wantHeight)
    } catch {
      close()
      throw error
    }
  }

  private func prepare(_ wantWidth: Int, _ wantHeight: Int) throws {
    var cap = v4l2_capability()
    try ioctl(EARSHOT_VIDIOC_QUERYCAP, &cap, "VIDIOC_QUERYCAP")
    card = V4L2Camera.string(&cap.card)
    driver = V4L2Camera.string(&cap.driver)
    let caps =
      cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
    guard caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 else {
      throw CameraError(
        .other(
          "camera \(path) (\(card)) is not a video capture device (it may be the metadata node of "
            + "a webcam: try the other /dev/video* nodes, `v4l2-ctl --list-devices`)"))
    }
    streaming = caps & UInt32(V4L2_CAP_STREAMING) != 0
    guard streaming || caps & UInt32(V4L2_CAP_READWRITE) != 0 else {
      throw CameraError(.other("camera \(path) (\(card)) offers neither streaming nor read() I/O"))
    }

    // Which of our formats does the device offer? YUYV first: it is the
    // sensor's own data, and we control the JPEG quality.
    var offered: [PixelFormat] = []
    var desc = v4l2_fmtdesc()
    desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    while earshot_v4l2_ioctl(fd, EARSHOT_VIDIOC_ENUM_FMT, &desc) == 0 {
      if desc.pixelformat == EARSHOT_V4L2_PIX_FMT_YUYV { offered.append(.yuyv) }
      if desc.pixelformat == EARSHOT_V4L2_PIX_FMT_MJPEG
        || desc.pixelformat == EARSHOT_V4L2_PIX_FMT_JPEG
      {
        offered.append(.mjpeg)
      }
      desc.index += 1
    }
    guard let chosen = offered.contains(.yuyv) ? .yuyv : offered.first else {
      throw CameraError(
        .other(
          "camera \(path) (\(card)) offers neither YUYV nor MJPEG frames; set [shutter] "
            + "capture_command to use another tool"))
    }

    var fmt = v4l2_format()
    fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    try ioctl(EARSHOT_VIDIOC_G_FMT, &fmt, "VIDIOC_G_FMT")
    if wantWidth > 0 { fmt.fmt.pix.width = UInt32(wantWidth) }
    if wantHeight > 0 { fmt.fmt.pix.height = UInt32(wantHeight) }
    fmt.fmt.pix.pixelformat =
      chosen == .yuyv ? EARSHOT_V4L2_PIX_FMT_YUYV : EARSHOT_V4L2_PIX_FMT_MJPEG
    fmt.fmt.pix.field = V4L2_FIELD_ANY.rawValue
    try ioctl(EARSHOT_VIDIOC_S_FMT, &fmt, "VIDIOC_S_FMT")
    // The driver may adjust anything; believe what it says back.
    switch fmt.fmt.pix.pixelformat {
    case EARSHOT_V4L2_PIX_FMT_YUYV: format = .yuyv
    case EARSHOT_V4L2_PIX_FMT_MJPEG, EARSHOT_V4L2_PIX_FMT_JPEG: format = .mjpeg
    default:
      throw CameraError(.other("camera \(path) (\(card)) refused both YUYV and MJPEG"))
    }
    width = Int(fmt.fmt.pix.width)
    height = Int(fmt.fmt.pix.height)
    stride = max(Int(fmt.fmt.pix.bytesperline), width * 2)
    sizeImage = Int(fmt.fmt.pix.sizeimage)
    if sizeImage == 0 { sizeImage = format == .yuyv ? stride * height : width * height * 2 }

    if streaming { try mapBuffers() }
  }

  private func mapBuffers() throws {
    var req = v4l2_requestbuffers()
    req.count = 4
    req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    req.memory = V4L2_MEMORY_MMAP.rawValue
    try ioctl(EARSHOT_VIDIOC_REQBUFS, &req, "VIDIOC_REQBUFS")
    guard req.count >= 1 else {
      throw CameraError(.other("camera \(path) (\(card)) gave no capture buffers"))
    }
    for i in 0..<req.count {
      var buf = v4l2_buffer()
      buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
      buf.memory = V4L2_MEMORY_MMAP.rawValue
      buf.index = i
      try ioctl(EARSHOT_VIDIOC_QUERYBUF, &buf, "VIDIOC_QUERYBUF")
      let p = mmap(
        nil, Int(buf.length), PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(buf.m.offset))
      guard let p, p != MAP_FAILED else {
        throw CameraError(V4L2Camera.failure(errno, path, "mmap"))
      }
      buffers.append((p, Int(buf.length)))
    }
  }

  /// Starts the stream for one frame, skipping `warmup` frames first.
  public func startFrame(warmup: Int) throws {
    framesToSkip = max(0, warmup)
    guard streaming else { return }  // read(): the first read starts capture
    for i in buffers.indices {
      var buf = v4l2_buffer()
      buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
      buf.memory = V4L2_MEMORY_MMAP.rawValue
      buf.index = UInt32(i)
      try ioctl(EARSHOT_VIDIOC_QBUF, &buf, "VIDIOC_QBUF")
    }
    var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
    try ioctl(EARSHOT_VIDIOC_STREAMON, &type, "VIDIOC_STREAMON")
    streamOn = true
  }

  /// Call when `fd` is readable: the frame, or nil if it was a warm-up
  /// frame or nothing was ready yet (wait for readable again).
  public func readFrame() throws -> Frame? {
    if !streaming {
      var bytes = [UInt8](repeating: 0, count: sizeImage)
      let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if n < 0 {
        if errno == EAGAIN || errno == EINTR { return nil }
        throw CameraError(V4L2Camera.failure(errno, path, "read"))
      }
      if framesToSkip > 0 {
        framesToSkip -= 1
        return nil
      }
      bytes.removeSubrange(n...)
      return frame(bytes)
    }
    var buf = v4l2_buffer()
    buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    buf.memory = V4L2_MEMORY_MMAP.rawValue
    if earshot_v4l2_ioctl(fd, EARSHOT_VIDIOC_DQBUF, &buf) != 0 {
      if errno == EAGAIN { return nil }
      throw CameraError(V4L2Camera.failure(errno, path, "VIDIOC_DQBUF"))
    }
    let index = Int(buf.index)
    let used = min(Int(buf.bytesused), buffers[index].length)
    let corrupt = buf.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0
    if framesToSkip > 0 || corrupt || used == 0 {
      if !corrupt && used > 0 { framesToSkip -= 1 }
      try ioctl(EARSHOT_VIDIOC_QBUF, &buf, "VIDIOC_QBUF")
      return nil
    }
    let bytes = [UInt8](
      UnsafeRawBufferPointer(start: buffers[index].pointer, count: used))
    stopStream()
    return frame(bytes)
  }

  private func frame(_ bytes: [UInt8]) -> Frame {
    Frame(
      format: format, width: width, height: height, stride: format == .yuyv ? stride : 0,
      bytes: bytes)
  }

  /// Stops streaming (buffers stay mapped for the next capture).
  public func stopStream() {
    guard streamOn else { return }
    var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
    _ = earshot_v4l2_ioctl(fd, EARSHOT_VIDIOC_STREAMOFF, &type)
    streamOn = false
  }

  /// Releases everything; the camera is free for other programs.
  public func close() {
    guard fd >= 0 else { return }
    stopStream()
    for b in buffers { munmap(b.pointer, b.length) }
    buffers = []
    if streaming {
      // Free the driver's buffers too (count 0), so a reopen starts clean.
      var req = v4l2_requestbuffers()
      req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
      req.memory = V4L2_MEMORY_MMAP.rawValue
      _ = earshot_v4l2_ioctl(fd, EARSHOT_VIDIOC_REQBUFS, &req)
    }
    _ = Glibc.close(fd)
    fd = -1
  }

  private func ioctl<T>(_ request: UInt, _ arg: inout T, _ name: String) throws {
    let r = withUnsafeMutablePointer(to: &arg) {
      earshot_v4l2_ioctl(fd, request, UnsafeMutableRawPointer($0))
    }
    guard r == 0 else {
      throw CameraError(V4L2Camera.failure(errno, path, name))
    }
  }

  /// What an errno means for a camera, in words that say what to do.
  static func failure(_ err: Int32, _ path: String, _ call: String) -> CameraFailure {
    switch err {
    case ENOENT, ENODEV, ENXIO:
      return .missing(
        "camera \(path) is missing (\(call): \(String(cString: strerror(err)))): connect a camera, "
          + "load its driver, or set [shutter] device")
    case EBUSY:
      return .busy(
        "camera \(path) is busy (\(call)): another program is using it; close that program "
          + "(`fuser \(path)` names it) and try again")
    case EACCES, EPERM:
      return .other(
        "camera \(path): permission denied (\(call)); add the user to the 'video' group")
    default:
      return .other("camera \(path): \(call) failed: \(String(cString: strerror(err)))")
    }
  }

  private static func string<T>(_ tuple: inout T) -> String {
    withUnsafeBytes(of: &tuple) { raw in
      let bytes = raw.prefix { $0 != 0 }
      return String(decoding: bytes, as: UTF8.self)
    }
  }
}

/// A camera failure as a Swift error; `failure` is what the shutter's
/// state machine is told.
public struct CameraError: Error, CustomStringConvertible {
  public let failure: CameraFailure
  public init(_ failure: CameraFailure) { self.failure = failure }
  public var description: String { failure.message }
}
