import CSystemd
import EarshotCore

#if canImport(Glibc)
  import Glibc
#endif

/// An sd-bus connection driven by the agent's epoll loop: the bus's
/// descriptor is watched for what `sd_bus_get_events` asks, its timeout is a
/// loop timer, and `sd_bus_process` runs until it has nothing left. No thread.
public final class DBusConnection {
  let bus: OpaquePointer
  private let loop: EventLoop
  private let fd: FileDescriptor
  private var timer: EventLoop.TimerID?
  private var timerDeadline = MonotonicTime.zero
  private var watchedEvents: UInt32 = 0
  private var handlers: [Unmanaged<ServeBox>] = []
  private var closed = false

  /// The system bus (`DBUS_SYSTEM_BUS_ADDRESS` overrides where it is), the
  /// user's session bus when `session` (`DBUS_SESSION_BUS_ADDRESS`, else
  /// `$XDG_RUNTIME_DIR/bus`), or the bus at `address` ("unix:path=...").
  public init(loop: EventLoop, address: String? = nil, session: Bool = false) throws {
    var b: OpaquePointer? = nil
    if let address {
      try check(sd_bus_new(&b), "sd_bus_new")
      try check(address.withCString { sd_bus_set_address(b, $0) }, "set address \(address)")
      try check(sd_bus_set_bus_client(b, 1), "set bus client")
      try check(sd_bus_start(b), "connect to \(address)")
    } else if session {
      let r = sd_bus_open_user(&b)
      if r < 0 {
        throw DBusError.errno(
          -r, "connect to the session bus (is DBUS_SESSION_BUS_ADDRESS or XDG_RUNTIME_DIR set?)")
      }
    } else {
      let r = sd_bus_open_system(&b)
      if r < 0 {
        throw DBusError.errno(
          -r, "connect to the system bus (is dbus running? is DBUS_SYSTEM_BUS_ADDRESS right?)")
      }
    }
    bus = b!
    self.loop = loop
    let raw = sd_bus_get_fd(bus)
    guard raw >= 0 else { throw DBusError.errno(-raw, "sd_bus_get_fd") }
    fd = FileDescriptor(rawValue: raw)
    try loop.watch(fd, events: EventLoop.readable) { [unowned self] _ in self.process() }
    watchedEvents = EventLoop.readable
    process()
  }

  deinit { close() }

  public func close() {
    guard !closed else { return }
    closed = true
    loop.unwatch(fd)
    if let timer { loop.cancel(timer) }
    sd_bus_flush_close_unref(bus)
    for h in handlers { h.release() }
    handlers = []
  }

  /// The unique name of this connection (":1.42").
  public var uniqueName: String {
    var p: UnsafePointer<CChar>? = nil
    guard sd_bus_get_unique_name(bus, &p) >= 0, let p else { return "" }
    return String(cString: p)
  }

  // MARK: Loop integration

  /// Runs everything sd-bus has to do now, then tells the loop what to wait for.
  func process() {
    guard !closed else { return }
    while true {
      let r = sd_bus_process(bus, nil)
      if r <= 0 { break }
    }
    rearm()
  }

  private func rearm() {
    guard !closed else { return }
    let events = UInt32(max(0, sd_bus_get_events(bus)))
    let wanted = (events & UInt32(POLLOUT) != 0 ? EventLoop.writable : 0) | EventLoop.readable
    if wanted != watchedEvents {
      try? loop.modify(fd, events: wanted)
      watchedEvents = wanted
    }
    var usec: UInt64 = 0
    if sd_bus_get_timeout(bus, &usec) >= 0, usec != UInt64.max {
      // sd-bus's timeout is absolute, on CLOCK_MONOTONIC, in µs.
      let deadline = MonotonicTime(nanos: usec &* 1000)
      if timer == nil || deadline != timerDeadline {
        if let timer { loop.cancel(timer) }
        timerDeadline = deadline
        timer = loop.at(deadline) { [weak self] in
          self?.timer = nil
          self?.process()
        }
      }
    } else if let t = timer {
      loop.cancel(t)
      timer = nil
    }
  }

  // MARK: Calls

  /// Calls a method; `reply` runs on the loop with the reply's values or
  /// the error. `timeout` 0 means sd-bus's default (25 s).
  public func call(
    destination: String, path: String, interface: String, member: String,
    _ args: [DBusValue] = [], timeoutMicros: UInt64 = 0,
    reply: @escaping (Result<[DBusValue], DBusError>) -> Void
  ) {
    var m: OpaquePointer? = nil
    var r = sd_bus_message_new_method_call(bus, &m, destination, path, interface, member)
    guard r >= 0, let m else {
      reply(.failure(.errno(-r, "new call \(interface).\(member)")))
      return
    }
    defer { sd_bus_message_unref(m) }
    do { try DBusWriter(message: m).append(args) } catch let e as DBusError {
      reply(.failure(e))
      return
    } catch { return }
    let box = Unmanaged.passRetained(HandlerBox { msg in reply(DBusConnection.result(of: msg)) })
    r = sd_bus_call_async(bus, nil, m, replyTrampoline, box.toOpaque(), timeoutMicros)
    if r < 0 {
      box.release()
      reply(.failure(.errno(-r, "call \(interface).\(member)")))
    }
    rearm()
  }

  static func result(of msg: OpaquePointer) -> Result<[DBusValue], DBusError> {
    if sd_bus_message_is_method_error(msg, nil) > 0 {
      let e = sd_bus_message_get_error(msg)
      let name = e?.pointee.name.map { String(cString: $0) } ?? "error"
      let text = e?.pointee.message.map { String(cString: $0) } ?? ""
      return .failure(.remote(name: name, message: text))
    }
    do { return .success(try DBusReader(message: msg).readAll()) } catch let e as DBusError {
      return .failure(e)
    } catch { return .failure(.malformed("\(error)")) }
  }

  /// Sends a signal.
  public func emit(path: String, interface: String, member: String, _ args: [DBusValue]) throws {
    var m: OpaquePointer? = nil
    try check(sd_bus_message_new_signal(bus, &m, path, interface, member), "new signal")
    defer { sd_bus_message_unref(m) }
    try DBusWriter(message: m!).append(args)
    try check(sd_bus_send(bus, m, nil), "send signal")
    rearm()
  }

  // MARK: Serving objects

  /// Every method call to `prefix` or a path below it goes to `handler`;
  /// it returns false for calls it does not know (sd-bus answers those).
  public func serve(prefix: String, _ handler: @escaping (DBusCall) -> Bool) throws {
    let box = Unmanaged.passRetained(
      ServeBox { [unowned self] msg in
        let call = DBusCall(connection: self, message: msg)
        let handled = handler(call)
        if !handled { call.disown() }
        return handled
      })
    handlers.append(box)
    try check(
      sd_bus_add_fallback(bus, nil, prefix, serveTrampoline, box.toOpaque()), "serve \(prefix)")
  }

  /// Calls `handler` with the signal's path, member and arguments for
  /// every message matching `rule` (a D-Bus match rule).
  public func match(_ rule: String, _ handler: @escaping (String, String, [DBusValue]) -> Void)
    throws
  {
    let box = Unmanaged.passRetained(
      ServeBox { msg in
        let path = sd_bus_message_get_path(msg).map { String(cString: $0) } ?? ""
        let member = sd_bus_message_get_member(msg).map { String(cString: $0) } ?? ""
        let args = (try? DBusReader(message: msg).readAll()) ?? []
        handler(path, member, args)
        return false
      })
    handlers.append(box)
    try check(sd_bus_add_match(bus, nil, rule, serveTrampolineAny, box.toOpaque()), "match")
    rearm()
  }

  /// Calls `handler` whenever the well-known `name` gets an owner (true:
  /// the service started) or loses it (false: it stopped or crashed).
  public func watchOwner(of name: String, _ handler: @escaping (Bool) -> Void) throws {
    try match(
      "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(name)'"
    ) { _, _, args in
      guard args.count == 3, case .string(let owner) = args[2] else { return }
      handler(!owner.isEmpty)
    }
  }

  /// Takes a well-known name (tests use it to stand in for a service).
  public func requestName(_ name: String) throws {
    try check(sd_bus_request_name(bus, name, 0), "request name \(name)")
    rearm()
  }

  func send(_ m: OpaquePointer) {
    _ = sd_bus_send(bus, m, nil)
    rearm()
  }
}

/// A method call being served. Hold it to answer later; answer once.
public final class DBusCall {
  unowned let connection: DBusConnection
  let message: OpaquePointer
  private var answered = false

  init(connection: DBusConnection, message: OpaquePointer) {
    self.connection = connection
    self.message = sd_bus_message_ref(message)
  }

  deinit {
    if !answered { replyError("org.freedesktop.DBus.Error.Failed", "no answer") }
    sd_bus_message_unref(message)
  }

  /// Not ours to answer (sd-bus answers unknown methods itself).
  func disown() { answered = true }

  public var path: String { string(sd_bus_message_get_path(message)) }
  public var interface: String { string(sd_bus_message_get_interface(message)) }
  public var member: String { string(sd_bus_message_get_member(message)) }
  public var sender: String { string(sd_bus_message_get_sender(message)) }

  /// The call's arguments (read once).
  public lazy var arguments: [DBusValue] = (try? DBusReader(message: message).readAll()) ?? []

  private func string(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }

  public func reply(_ values: [DBusValue] = []) {
    guard !answered else { return }
    answered = true
    var r: OpaquePointer? = nil
    guard sd_bus_message_new_method_return(message, &r) >= 0, let r else { return }
    defer { sd_bus_message_unref(r) }
    do { try DBusWriter(message: r).append(values) } catch {
      answered = false
      replyError("org.freedesktop.DBus.Error.Failed", "cannot encode the reply: \(error)")
      return
    }
    connection.send(r)
  }

  public func replyError(_ name: String, _ text: String) {
    guard !answered else { return }
    answered = true
    var e = sd_bus_error(name: nil, message: nil, _need_free: 0)
    defer { sd_bus_error_free(&e) }
    _ = sd_bus_error_set(&e, name, text)
    var r: OpaquePointer? = nil
    guard sd_bus_message_new_method_error(message, &r, &e) >= 0, let r else { return }
    defer { sd_bus_message_unref(r) }
    connection.send(r)
  }
}

/// Holds a Swift closure for a C callback's userdata.
final class HandlerBox {
  let fn: (OpaquePointer) -> Void
  init(_ fn: @escaping (OpaquePointer) -> Void) { self.fn = fn }
}

/// Holds an object handler: true when it answered (or will answer) the call.
final class ServeBox {
  let fn: (OpaquePointer) -> Bool
  init(_ fn: @escaping (OpaquePointer) -> Bool) { self.fn = fn }
}

private let replyTrampoline: sd_bus_message_handler_t = { m, userdata, _ in
  guard let m, let userdata else { return 0 }
  let box = Unmanaged<HandlerBox>.fromOpaque(userdata).takeRetainedValue()
  box.fn(m)
  return 0
}

private let serveTrampolineAny: sd_bus_message_handler_t = { m, userdata, _ in
  guard let m, let userdata else { return 0 }
  let box = Unmanaged<ServeBox>.fromOpaque(userdata).takeUnretainedValue()
  return box.fn(m) ? 1 : 0
}

private let serveTrampoline: sd_bus_message_handler_t = { m, userdata, _ in
  guard let m, let userdata else { return 0 }
  guard sd_bus_message_is_method_call(m, nil, nil) > 0 else { return 0 }
  let box = Unmanaged<ServeBox>.fromOpaque(userdata).takeUnretainedValue()
  return box.fn(m) ? 1 : 0
}
