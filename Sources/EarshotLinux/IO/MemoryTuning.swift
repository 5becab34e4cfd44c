import CLinux

/// Process-wide allocator settings, applied once at start.
public enum MemoryTuning {
  /// Large blocks (grown tables) go back to the kernel when freed; see the
  /// shim for why glibc's default keeps them.
  public static func apply() { earshot_tune_malloc() }
}
