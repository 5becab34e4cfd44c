// Video4Linux2 from the kernel's UAPI headers. The VIDIOC_* requests and
// v4l2_fourcc() are function-like macros Swift cannot import, so they are
// restated here as constants; ioctl is variadic, so it gets a typed wrapper.
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/videodev2.h>

static const unsigned long EARSHOT_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
static const unsigned long EARSHOT_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
static const unsigned long EARSHOT_VIDIOC_G_FMT = VIDIOC_G_FMT;
static const unsigned long EARSHOT_VIDIOC_S_FMT = VIDIOC_S_FMT;
static const unsigned long EARSHOT_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
static const unsigned long EARSHOT_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
static const unsigned long EARSHOT_VIDIOC_QBUF = VIDIOC_QBUF;
static const unsigned long EARSHOT_VIDIOC_DQBUF = VIDIOC_DQBUF;
static const unsigned long EARSHOT_VIDIOC_STREAMON = VIDIOC_STREAMON;
static const unsigned long EARSHOT_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;

static const unsigned int EARSHOT_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
static const unsigned int EARSHOT_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
static const unsigned int EARSHOT_V4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;

/// ioctl with the argument typed, retried on EINTR. Returns -1 and sets
/// errno on failure, like ioctl.
static inline int earshot_v4l2_ioctl(int fd, unsigned long request, void *arg) {
  int r;
  do {
    r = ioctl(fd, request, arg);
  } while (r == -1 && errno == EINTR);
  return r;
}
