#include <alsa/asoundlib.h>
#include <stdarg.h>
#include <stdio.h>

// ALSA prints its own diagnostics ("ALSA lib confmisc.c:855:(parse_card)
// cannot find card '0'") to stderr unless given a handler, and the handler
// is variadic, which Swift cannot define. This one formats the line and
// passes it, whole, to a plain callback that Swift provides.
typedef void (*earshot_alsa_log_fn)(const char *line);

// Static, so each object file that uses this has its own copy: the
// installer below registers the handler of the same copy it sets the
// callback of, so the two always agree. Inside a function, because Swift
// emits only the C functions it uses, not a header's variables. Atomic
// loads and stores: ALSA may report from any thread that opens a device.
static inline earshot_alsa_log_fn *earshot_alsa_log_target(void) {
  static earshot_alsa_log_fn target;
  return &target;
}

static void earshot_alsa_error_handler(const char *file, int line, const char *function,
                                       int err, const char *fmt, ...) {
  earshot_alsa_log_fn target = __atomic_load_n(earshot_alsa_log_target(), __ATOMIC_ACQUIRE);
  if (!target) return;
  char text[512];
  int n = snprintf(text, sizeof text, "%s:%i:(%s) ", file ? file : "?", line,
                   function ? function : "?");
  if (n < 0) return;
  if ((size_t)n < sizeof text) {
    va_list args;
    va_start(args, fmt);
    int m = vsnprintf(text + n, sizeof text - n, fmt ? fmt : "", args);
    va_end(args);
    if (m > 0) n += m;
  }
  if (err && (size_t)n < sizeof text) snprintf(text + n, sizeof text - n, ": %s", snd_strerror(err));
  target(text);
}

// Sends ALSA's diagnostics to `target` instead of stderr (NULL drops them).
static inline int earshot_alsa_set_log(earshot_alsa_log_fn target) {
  __atomic_store_n(earshot_alsa_log_target(), target, __ATOMIC_RELEASE);
  return snd_lib_error_set_handler(earshot_alsa_error_handler);
}
