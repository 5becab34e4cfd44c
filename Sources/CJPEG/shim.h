// libjpeg-turbo, wrapped in three small C functions because libjpeg reports
// errors by longjmp from its error_exit hook, and a longjmp must never
// cross Swift frames. Each function owns its setjmp; Swift sees plain
// return codes and an error message.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>

struct earshot_jpeg_error {
  struct jpeg_error_mgr mgr;
  jmp_buf jump;
  char *message;
  int message_size;
};

static void earshot_jpeg_error_exit(j_common_ptr cinfo) {
  struct earshot_jpeg_error *e = (struct earshot_jpeg_error *)cinfo->err;
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  if (e->message && e->message_size > 0) {
    strncpy(e->message, text, (size_t)e->message_size - 1);
    e->message[e->message_size - 1] = 0;
  }
  longjmp(e->jump, 1);
}

static void earshot_jpeg_quiet(j_common_ptr cinfo, int level) {
  (void)cinfo;
  (void)level;
}

/// Encodes a packed YUYV 4:2:2 frame (Y0 U Y1 V per two pixels, `stride`
/// bytes per row) as a baseline JPEG. libjpeg takes YCbCr directly, so no
/// RGB round trip: each pixel pair's chroma is shared by both pixels.
/// On success returns 0 and a malloc'd buffer in *out (free it).
static inline int earshot_jpeg_encode_yuyv(const unsigned char *yuyv, int width, int height,
                                           int stride, int quality, unsigned char **out,
                                           unsigned long *out_size, char *message,
                                           int message_size) {
  struct jpeg_compress_struct c;
  struct earshot_jpeg_error err;
  // volatile: read after a longjmp back into this frame.
  unsigned char *volatile row = NULL;
  *out = NULL;
  *out_size = 0;
  c.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = earshot_jpeg_error_exit;
  err.mgr.emit_message = earshot_jpeg_quiet;
  err.message = message;
  err.message_size = message_size;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&c);
    free(row);
    free(*out);
    *out = NULL;
    return -1;
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, out, out_size);
  c.image_width = (JDIMENSION)width;
  c.image_height = (JDIMENSION)height;
  c.input_components = 3;
  c.in_color_space = JCS_YCbCr;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  row = (unsigned char *)malloc((size_t)width * 3);
  if (!row) {
    strncpy(message, "out of memory", (size_t)message_size - 1);
    jpeg_destroy_compress(&c);
    return -1;
  }
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    const unsigned char *src = yuyv + (size_t)c.next_scanline * (size_t)stride;
    for (int x = 0; x < width; x++) {
      const unsigned char *pair = src + (size_t)(x / 2) * 4;
      row[x * 3] = src[(size_t)x * 2];  // Y of this pixel
      row[x * 3 + 1] = pair[1];         // U (Cb) of the pair
      row[x * 3 + 2] = pair[3];         // V (Cr) of the pair
    }
    JSAMPROW rows[1] = {row};
    jpeg_write_scanlines(&c, rows, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  free(row);
  return 0;
}

/// Decodes a JPEG completely (every scanline), reporting its size. Used to
/// check a frame is a whole, valid picture, and by the tests. When `out`
/// is not NULL, also re-encodes it as a standard JPEG (with Huffman
/// tables: many webcams' MJPEG frames omit them, relying on the defaults
/// from the spec, which libjpeg-turbo's decoder supplies but some viewers
/// do not).
static inline int earshot_jpeg_decode(const unsigned char *jpeg, unsigned long size,
                                      int quality, int *width, int *height,
                                      unsigned char **out, unsigned long *out_size,
                                      char *message, int message_size) {
  struct jpeg_decompress_struct d;
  struct jpeg_compress_struct c;
  struct earshot_jpeg_error err;  // shared: one setjmp serves both objects
  unsigned char *volatile row = NULL;
  volatile int compressing = 0;
  if (out) {
    *out = NULL;
    *out_size = 0;
  }
  d.err = jpeg_std_error(&err.mgr);
  c.err = &err.mgr;
  err.mgr.error_exit = earshot_jpeg_error_exit;
  err.mgr.emit_message = earshot_jpeg_quiet;
  err.message = message;
  err.message_size = message_size;
  if (setjmp(err.jump)) {
    goto fail;
  }
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, jpeg, size);
  jpeg_read_header(&d, TRUE);
  jpeg_start_decompress(&d);
  *width = (int)d.output_width;
  *height = (int)d.output_height;
  row = (unsigned char *)malloc((size_t)d.output_width * (size_t)d.output_components);
  if (!row) goto fail;
  if (out) {
    jpeg_create_compress(&c);
    compressing = 1;
    jpeg_mem_dest(&c, out, out_size);
    c.image_width = d.output_width;
    c.image_height = d.output_height;
    c.input_components = d.output_components;
    c.in_color_space = d.out_color_space;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
  }
  while (d.output_scanline < d.output_height) {
    JSAMPROW rows[1] = {row};
    jpeg_read_scanlines(&d, rows, 1);
    if (out) jpeg_write_scanlines(&c, rows, 1);
  }
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  if (out) {
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
  }
  free(row);
  return 0;
fail:
  jpeg_destroy_decompress(&d);
  if (compressing) jpeg_destroy_compress(&c);
  free(row);
  if (out) {
    free(*out);
    *out = NULL;
  }
  return -1;
}
