import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// What the device is told for one of its events.
public enum ShutterReply: Sendable, Equatable {
  /// A state; `photo` is the file a `photoSuccess` wrote.
  case state(ShutterState, photo: String?)
  /// An unknown event value: an error, not a state.
  case error(unknownValue: Int)
}

/// Carries out the remote shutter's actions on the event loop: the V4L2
/// camera (or `[shutter] capture_command`), the photo files, and the
/// timeout of a capture; feeds the results back to the state machine.
public final class ShutterDriver {
  public let settings: ShutterConfig
  public let store: PhotoStore
  private let loop: EventLoop
  private var machine = RemoteShutter()
  private var camera: V4L2Camera?
  private var command: ChildProcess?
  private var captureTimer: EventLoop.TimerID?
  private var capturePath: String?
  private var lastPhoto: String?
  private var inputs: [ShutterInput] = []
  private var processing = false

  /// One call per device event, in order.
  public var onReply: (ShutterReply) -> Void = { _ in }
  public var onLog: (String) -> Void = { _ in }

  public init(settings: ShutterConfig, loop: EventLoop) {
    self.settings = settings
    self.loop = loop
    store = PhotoStore(configured: settings.directory)
  }

  deinit {
    command?.cancel()
    camera?.close()
  }

  public var inPhotoMode: Bool { machine.inPhotoMode }

  /// A device event by its raw wire value.
  public func send(_ raw: Int) { feed(.device(ShutterEventValue(raw: raw))) }

  private func feed(_ input: ShutterInput) {
    inputs.append(input)
    guard !processing else { return }  // results from inside an action wait their turn
    processing = true
    defer { processing = false }
    while !inputs.isEmpty {
      for action in machine.handle(inputs.removeFirst()) { perform(action) }
    }
  }

  private func perform(_ action: ShutterAction) {
    switch action {
    case .openCamera: openCamera()
    case .capture: capture()
    case .releaseCamera: releaseCamera()
    case .reply(let state):
      onReply(.state(state, photo: state == .photoSuccess ? lastPhoto : nil))
    case .replyError(let raw): onReply(.error(unknownValue: raw))
    case .log(let line): onLog(line)
    }
  }

  private func openCamera() {
    if settings.captureCommand != nil {
      feed(.cameraReady)  // the command owns the camera, per photo
      return
    }
    let cam = V4L2Camera(path: settings.device)
    do {
      try cam.open(width: settings.width ?? 0, height: settings.height ?? 0)
      camera = cam
      onLog(
        "camera \(cam.path) (\(cam.card), \(cam.driver)) ready: \(cam.width)×\(cam.height) "
          + cam.format.name)
      feed(.cameraReady)
    } catch let e as CameraError {
      feed(.cameraFailedToOpen(e.failure))
    } catch {
      feed(.cameraFailedToOpen(.other("camera \(cam.path): \(error)")))
    }
  }

  private func capture() {
    let path: String
    do {
      try store.ensureDirectory()
      path = store.nextPath()
    } catch {
      feed(.photoFailed(.other("\(error); set [shutter] directory"), cameraLost: false))
      return
    }
    capturePath = path
    if let line = settings.commandLine(for: path) {
      runCommand(line, path)
      return
    }
    guard let cam = camera else {
      feed(.photoFailed(.other("camera \(settings.device) is not open"), cameraLost: true))
      return
    }
    do {
      try cam.startFrame(warmup: settings.warmupFrames)
      try loop.watch(cam.descriptor!, events: EventLoop.readable) { [weak self] _ in
        self?.frameReady()
      }
      captureTimer = loop.after(seconds: settings.timeout) { [weak self] in
        guard let self else { return }
        self.captureTimer = nil
        self.endCapture()
        self.feed(
          .photoFailed(
            .other("camera \(self.settings.device): no frame within \(self.settings.timeout) s"),
            cameraLost: false))
      }
    } catch let e as CameraError {
      endCapture()
      feed(.photoFailed(e.failure, cameraLost: isLost(e.failure)))
    } catch {
      endCapture()
      feed(.photoFailed(.other("\(error)"), cameraLost: false))
    }
  }

  private func frameReady() {
    guard let cam = camera, let path = capturePath else { return }
    do {
      guard let frame = try cam.readFrame() else { return }  // warm-up frame
      endCapture()
      let jpeg = try JPEGEncoder.encode(frame)
      try store.write(jpeg, to: path)
      lastPhoto = path
      onLog(
        "photo \(path): \(frame.width)×\(frame.height) from \(frame.format.name), \(jpeg.count) bytes"
      )
      feed(.photoTaken(path))
    } catch let e as CameraError {
      endCapture()
      feed(.photoFailed(e.failure, cameraLost: isLost(e.failure)))
    } catch {
      endCapture()
      feed(.photoFailed(.other("camera \(cam.path): \(error)"), cameraLost: false))
    }
  }

  private func runCommand(_ line: [String], _ path: String) {
    do {
      command = try ChildProcess(
        line, environment: [("EARSHOT_PHOTO", path)], timeout: settings.timeout, loop: loop
      ) { [weak self] result in
        guard let self else { return }
        self.command = nil
        let tail = result.output.split(separator: "\n").suffix(3).joined(separator: " / ")
        if result.status == 0 {
          if access(path, F_OK) != 0 {
            self.onLog("capture_command succeeded but wrote no \(path) (it may name its own files)")
          }
          self.lastPhoto = path
          self.feed(.photoTaken(path))
        } else {
          let why =
            result.timedOut
            ? "capture_command \(line[0]) took longer than \(self.settings.timeout) s; killed"
            : "capture_command \(line[0]) failed (exit \(result.status.map(String.init) ?? "by signal"))"
              + (tail.isEmpty ? "" : ": \(tail)")
          self.feed(.photoFailed(.other(why), cameraLost: false))
        }
      }
    } catch {
      feed(
        .photoFailed(
          .other("\(error); check [shutter] capture_command"), cameraLost: false))
    }
  }

  private func endCapture() {
    if let t = captureTimer { loop.cancel(t) }
    captureTimer = nil
    if let cam = camera, let fd = cam.descriptor {
      loop.unwatch(fd)
      cam.stopStream()
    }
  }

  private func releaseCamera() {
    endCapture()
    command?.cancel()
    command = nil
    camera?.close()
    camera = nil
  }

  private func isLost(_ f: CameraFailure) -> Bool {
    if case .missing = f { return true }
    return false
  }
}
