#include <sys/socket.h>
#include <sys/ioctl.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>

// The ioctl request numbers are function-like macros (_IOR/_IOW) that Swift
// cannot import, and ioctl itself is variadic: wrap both.
static inline unsigned long earshot_hcigetdevlist(void) { return HCIGETDEVLIST; }
static inline unsigned long earshot_hcigetdevinfo(void) { return HCIGETDEVINFO; }
static inline unsigned long earshot_hcidevup(void) { return HCIDEVUP; }
static inline int earshot_ioctl_ptr(int fd, unsigned long request, void *arg) {
  return ioctl(fd, request, arg);
}
static inline int earshot_ioctl_int(int fd, unsigned long request, int arg) {
  return ioctl(fd, request, arg);
}
