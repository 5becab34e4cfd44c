/// The remote shutter: a device's button drives the laptop's camera.
///
/// The device sends events (`enter` 1, `capture` 2, `exit` 0); Earshot
/// answers every event with one state synced back to the device
/// (`enteredPhotoMode` 1, `exitedOrUnableToEnter` 0, `photoSuccess` 2,
/// `photoFailed` 3), or with an error for a value it does not know.
/// The machine is pure: events in, actions out. The shell opens, captures
/// and releases the camera and feeds the results back as events.

/// What the device asks for, as it is numbered on the wire.
public enum ShutterCommand: Int, Sendable, CaseIterable {
  case exit = 0
  case enter = 1
  case capture = 2

  /// Names used by the CLI and the control socket.
  public var name: String {
    switch self {
    case .exit: "exit"
    case .enter: "enter"
    case .capture: "capture"
    }
  }

  /// Parses a name or a wire number; `nil` for anything else.
  public init?(text: String) {
    if let n = Int(text) {
      self.init(rawValue: n)
      return
    }
    guard let c = ShutterCommand.allCases.first(where: { $0.name == text.lowercased() }) else {
      return nil
    }
    self = c
  }
}

/// The answer synced back to the device, as it is numbered on the wire.
public enum ShutterState: Int, Sendable, CaseIterable {
  case exitedOrUnableToEnter = 0
  case enteredPhotoMode = 1
  case photoSuccess = 2
  case photoFailed = 3

  public var name: String {
    switch self {
    case .exitedOrUnableToEnter: "exitedOrUnableToEnter"
    case .enteredPhotoMode: "enteredPhotoMode"
    case .photoSuccess: "photoSuccess"
    case .photoFailed: "photoFailed"
    }
  }
}

/// A device event as it arrives: a known command or an unknown raw value
/// (-1 or anything else), which is answered with an error, not a state.
public enum ShutterEventValue: Sendable, Equatable {
  case command(ShutterCommand)
  case unknown(Int)

  public init(raw: Int) {
    if let c = ShutterCommand(rawValue: raw) {
      self = .command(c)
    } else {
      self = .unknown(raw)
    }
  }
}

/// Why the camera could not do what was asked; carried into log lines.
public enum CameraFailure: Sendable, Equatable {
  /// The device node does not exist (no camera, wrong `[shutter] device`).
  case missing(String)
  /// Another program holds the camera.
  case busy(String)
  /// Anything else: not a capture device, no usable format, I/O error...
  case other(String)

  public var message: String {
    switch self {
    case .missing(let m), .busy(let m), .other(let m): m
    }
  }
}

/// What happens to the shutter.
public enum ShutterInput: Sendable, Equatable {
  /// A device event (its raw value already classified).
  case device(ShutterEventValue)
  /// The camera is open and prepared.
  case cameraReady
  case cameraFailedToOpen(CameraFailure)
  /// A photo was written (path or a description of where it went).
  case photoTaken(String)
  /// A capture failed; `cameraLost` when the camera is no longer usable
  /// (unplugged mid-capture), so the machine leaves photo mode.
  case photoFailed(CameraFailure, cameraLost: Bool)
}

/// What the shell must do, in order.
public enum ShutterAction: Sendable, Equatable {
  case openCamera
  case capture
  case releaseCamera
  /// Sync this state back to the device (one per known device event).
  case reply(ShutterState)
  /// Answer an unknown event value with an error; nothing changed.
  case replyError(unknownValue: Int)
  /// A line for the log: which camera, what failed, what to do.
  case log(String)
}

/// The pure state machine. Device events that arrive while the camera is
/// busy opening or capturing wait in a short queue, so every event gets its
/// own answer, in the order the events came.
public struct RemoteShutter: Sendable {
  public enum Phase: Sendable, Equatable {
    /// Not in photo mode; the camera is closed.
    case idle
    /// `openCamera` issued, waiting for the camera's answer.
    case opening
    /// In photo mode, camera open and idle.
    case photoMode
    /// `capture` issued, waiting for the photo.
    case capturing
  }

  public private(set) var phase: Phase = .idle
  /// Device events waiting for the camera to finish.
  public private(set) var waiting: [ShutterEventValue] = []
  /// Events beyond this many waiting are refused (a stuck camera must not
  /// grow memory without bound).
  public let maxWaiting: Int

  public init(maxWaiting: Int = 16) {
    self.maxWaiting = maxWaiting
  }

  public var inPhotoMode: Bool { phase == .photoMode || phase == .capturing }

  public mutating func handle(_ input: ShutterInput) -> [ShutterAction] {
    var actions: [ShutterAction] = []
    switch input {
    case .device(let value):
      if phase == .opening || phase == .capturing {
        if waiting.count >= maxWaiting {
          // Answered at once: the camera is stuck on an earlier request.
          actions.append(
            .log("shutter: \(maxWaiting) events already waiting for the camera; refusing"))
          actions.append(refusal(for: value))
        } else {
          waiting.append(value)
        }
        return actions
      }
      device(value, &actions)

    case .cameraReady:
      guard phase == .opening else {
        // Nobody asked (a result after exit): give the camera back.
        return [.releaseCamera]
      }
      phase = .photoMode
      actions.append(.reply(.enteredPhotoMode))

    case .cameraFailedToOpen(let failure):
      guard phase == .opening else { return [] }
      phase = .idle
      actions.append(.log(failure.message))
      actions.append(.reply(.exitedOrUnableToEnter))

    case .photoTaken:
      guard phase == .capturing else { return [] }
      phase = .photoMode
      actions.append(.reply(.photoSuccess))

    case .photoFailed(let failure, let lost):
      guard phase == .capturing else { return [] }
      actions.append(.log(failure.message))
      if lost {
        phase = .idle
        actions.append(.releaseCamera)
      } else {
        phase = .photoMode
      }
      actions.append(.reply(.photoFailed))
    }
    drain(&actions)
    return actions
  }

  /// Runs waiting events until one needs the camera again.
  private mutating func drain(_ actions: inout [ShutterAction]) {
    while phase != .opening && phase != .capturing, !waiting.isEmpty {
      device(waiting.removeFirst(), &actions)
    }
  }

  private mutating func device(_ value: ShutterEventValue, _ actions: inout [ShutterAction]) {
    switch value {
    case .unknown(let raw):
      actions.append(.replyError(unknownValue: raw))
    case .command(.enter):
      if phase == .photoMode {
        actions.append(.reply(.enteredPhotoMode))  // already there
      } else {
        phase = .opening
        actions.append(.openCamera)
      }
    case .command(.capture):
      if phase == .photoMode {
        phase = .capturing
        actions.append(.capture)
      } else {
        // Outside photo mode nothing is captured.
        actions.append(.reply(.photoFailed))
      }
    case .command(.exit):
      if phase == .photoMode {
        actions.append(.releaseCamera)
      }
      phase = .idle
      actions.append(.reply(.exitedOrUnableToEnter))
    }
  }

  private func refusal(for value: ShutterEventValue) -> ShutterAction {
    switch value {
    case .unknown(let raw): .replyError(unknownValue: raw)
    case .command(.enter), .command(.exit): .reply(.exitedOrUnableToEnter)
    case .command(.capture): .reply(.photoFailed)
    }
  }
}
