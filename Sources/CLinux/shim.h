// Linux interfaces that Swift's Glibc module does not expose.
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/prctl.h>
#include <spawn.h>
#include <signal.h>

// Socket types and flags as plain ints. glibc declares them as members of
// an enum that Swift, in whole-module (release) builds, fails to find once
// several C modules have included <sys/socket.h>; these names are ours.
static const int earshot_sock_stream = SOCK_STREAM;
static const int earshot_sock_raw = SOCK_RAW;
static const int earshot_sock_seqpacket = SOCK_SEQPACKET;
static const int earshot_sock_nonblock = SOCK_NONBLOCK;
static const int earshot_sock_cloexec = SOCK_CLOEXEC;

#include <malloc.h>

// A fixed mmap threshold: glibc otherwise raises it each time a large block
// is freed, so the monitor's tables, once grown, are served from the heap and
// their old copies stay resident. Fixed, blocks over 128 KiB come from mmap
// and go back to the kernel when freed.
static inline void earshot_tune_malloc(void) {
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

#include <sys/syscall.h>
#include <unistd.h>

// recvmmsg(2): glibc declares it (and struct mmsghdr) only under
// _GNU_SOURCE, which Swift's Glibc module is not built with. The kernel's
// layout, under our own name.
struct earshot_mmsghdr {
  struct msghdr msg_hdr;
  unsigned int msg_len;
};
static const int earshot_msg_dontwait = MSG_DONTWAIT;
static const int earshot_msg_trunc = MSG_TRUNC;
static inline int earshot_recvmmsg(int fd, struct earshot_mmsghdr *vec, unsigned int n, int flags) {
  return (int)syscall(SYS_recvmmsg, fd, vec, n, flags, (void *)0);
}
