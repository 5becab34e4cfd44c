import CSQLite3

#if canImport(Glibc)
  import Glibc
#endif

/// A failed SQLite call, with SQLite's own message and what was being done.
public struct SQLiteError: Error, CustomStringConvertible, Equatable {
  /// The extended result code.
  public let code: Int32
  public let message: String
  public let context: String

  /// Another connection holds the lock: worth retrying later.
  public var isBusy: Bool {
    let primary = code & 0xFF
    return primary == SQLITE_BUSY || primary == SQLITE_LOCKED
  }
  /// The disk (or the database's size limit) is full.
  public var isFull: Bool { code & 0xFF == SQLITE_FULL }

  public var description: String {
    var hint = ""
    if isBusy { hint = " (another process holds the database's write lock; retrying later)" }
    if isFull { hint = " (free disk space or lower [log] keep_days)" }
    return "\(context): \(message)\(hint)"
  }
}

/// One SQLite connection, used from one thread (opened NOMUTEX).
public final class SQLiteConnection {
  public let path: String
  let handle: OpaquePointer

  /// Opens (or with `create`, creates) a database. `busyTimeoutMillis` is how
  /// long a call may wait for another connection's lock before failing
  /// with SQLITE_BUSY.
  public init(path: String, readOnly: Bool = false, create: Bool = false, busyTimeoutMillis: Int32)
    throws
  {
    self.path = path
    var flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
    if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
    flags |= SQLITE_OPEN_NOMUTEX
    var db: OpaquePointer? = nil
    let rc = sqlite3_open_v2(path, &db, flags, nil)
    guard rc == SQLITE_OK, let db else {
      let message =
        db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
      if let db { sqlite3_close_v2(db) }
      throw SQLiteError(code: rc, message: message, context: "cannot open \(path)")
    }
    handle = db
    sqlite3_extended_result_codes(db, 1)
    sqlite3_busy_timeout(db, busyTimeoutMillis)
  }

  deinit { sqlite3_close_v2(handle) }

  func error(_ rc: Int32, _ context: String) -> SQLiteError {
    SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)), context: context)
  }

  /// Runs one or more statements that return no rows we need.
  public func exec(_ sql: String) throws {
    var err: UnsafeMutablePointer<CChar>? = nil
    let rc = sqlite3_exec(handle, sql, nil, nil, &err)
    if let err { sqlite3_free(err) }
    guard rc == SQLITE_OK else { throw error(rc, "\(path): \(sql.prefix(60))") }
  }

  public func prepare(_ sql: String) throws -> SQLiteStatement {
    var stmt: OpaquePointer? = nil
    let rc = sqlite3_prepare_v2(handle, sql, -1, &stmt, nil)
    guard rc == SQLITE_OK, let stmt else { throw error(rc, "\(path): preparing \(sql.prefix(60))") }
    return SQLiteStatement(stmt, connection: self)
  }

  /// The first column of the first row, as an integer.
  public func integer(_ sql: String) throws -> Int64? {
    let s = try prepare(sql)
    return try s.step() ? s.int64(0) : nil
  }

  public func text(_ sql: String) throws -> String? {
    let s = try prepare(sql)
    return try s.step() ? s.string(0) : nil
  }

  public var changes: Int { Int(sqlite3_changes(handle)) }
  public var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }
}

/// A prepared statement. Binding indexes start at 1, columns at 0.
public final class SQLiteStatement {
  let stmt: OpaquePointer
  let connection: SQLiteConnection

  init(_ stmt: OpaquePointer, connection: SQLiteConnection) {
    self.stmt = stmt
    self.connection = connection
  }

  deinit { sqlite3_finalize(stmt) }

  /// SQLite copies the text before the call returns.
  private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

  public func bind(_ i: Int32, _ v: Int64?) {
    if let v { sqlite3_bind_int64(stmt, i, v) } else { sqlite3_bind_null(stmt, i) }
  }
  public func bind(_ i: Int32, _ v: Double?) {
    if let v, v.isFinite { sqlite3_bind_double(stmt, i, v) } else { sqlite3_bind_null(stmt, i) }
  }
  public func bind(_ i: Int32, _ v: String?) {
    if let v {
      sqlite3_bind_text(stmt, i, v, -1, Self.transient)
    } else {
      sqlite3_bind_null(stmt, i)
    }
  }

  /// `true` when a row is ready, `false` when done.
  public func step() throws -> Bool {
    let rc = sqlite3_step(stmt)
    if rc == SQLITE_ROW { return true }
    if rc == SQLITE_DONE { return false }
    let e = connection.error(
      rc, "\(connection.path): \(String(cString: sqlite3_sql(stmt)).prefix(60))")
    sqlite3_reset(stmt)
    throw e
  }

  /// Runs a statement that returns no rows, then readies it for reuse.
  public func run() throws {
    _ = try step()
    reset()
  }

  public func reset() {
    sqlite3_reset(stmt)
    sqlite3_clear_bindings(stmt)
  }

  public func isNull(_ c: Int32) -> Bool { sqlite3_column_type(stmt, c) == SQLITE_NULL }
  public func int64(_ c: Int32) -> Int64 { sqlite3_column_int64(stmt, c) }
  public func double(_ c: Int32) -> Double { sqlite3_column_double(stmt, c) }
  public func string(_ c: Int32) -> String {
    guard let p = sqlite3_column_text(stmt, c) else { return "" }
    return String(cString: p)
  }
  public func optionalInt(_ c: Int32) -> Int64? { isNull(c) ? nil : int64(c) }
  public func optionalDouble(_ c: Int32) -> Double? { isNull(c) ? nil : double(c) }
  public func optionalString(_ c: Int32) -> String? { isNull(c) ? nil : string(c) }
}
