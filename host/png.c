/*
** png.c: the two C functions under gpu.show (lua/luagpu/show.lua).
** gpu.encode_png(width, height, channels, pixels) encodes 8-bit pixels
** (a string of width*height*channels bytes, rows top first; channels 1
** grey, 2 grey+alpha, 3 RGB, 4 RGBA) as PNG through libpng and returns its
** bytes. gpu.write_file(path, data) writes a new or regular file as
** lg_save_open does (savefile.c: through a temporary file beside it
** renamed into place, so a failed write leaves the old file whole); it
** refuses anything else at path (a symbolic link, a FIFO, a folder, a
** device) rather than write through it.
*/
#define _XOPEN_SOURCE 700   /* lstat */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <png.h>

#include "internal.h"

#define MAX_SIDE 65536   /* wider or taller images are surely a mistake */

/* The growing memory that libpng writes into; failed is set instead of
** raising, since a Lua error must not cross libpng's own longjmp. */
typedef struct {
  unsigned char *data;
  size_t len, cap;
  int failed;
} Sink;

static void sink_write(png_structp png, png_bytep bytes, png_size_t n) {
  Sink *s = (Sink *)png_get_io_ptr(png);
  if (s->failed) return;
  if (s->len + n > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    unsigned char *p;
    while (cap < s->len + n) cap *= 2;
    p = realloc(s->data, cap);
    if (p == NULL) {
      s->failed = 1;
      return;
    }
    s->data = p;
    s->cap = cap;
  }
  memcpy(s->data + s->len, bytes, n);
  s->len += n;
}

static void sink_flush(png_structp png) {
  (void)png;
}

/* Encodes into s; returns 0 when libpng failed or memory ran out. The
** locals that live across setjmp are volatile or untouched after it. */
static int encode(Sink *s, const unsigned char *pixels, png_uint_32 w, png_uint_32 h, int channels) {
  static const int color[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                              PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png != NULL ? png_create_info_struct(png) : NULL;
  png_uint_32 y;
  if (info == NULL) {
    png_destroy_write_struct(&png, NULL);
    return 0;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return 0;
  }
  png_set_write_fn(png, s, sink_write, sink_flush);
  png_set_IHDR(png, info, w, h, 8, color[channels], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (y = 0; y < h; y++)
    png_write_row(png, (png_const_bytep)(pixels + (size_t)y * w * (size_t)channels));
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  return !s->failed;
}

/* gpu.encode_png(width, height, channels, pixels) -> string */
static int png_encode(lua_State *L) {
  const char *fn = "encode_png";
  lua_Integer w = lg_checkinteger(L, 1, fn, 1), h = lg_checkinteger(L, 2, fn, 2);
  lua_Integer c = lg_checkinteger(L, 3, fn, 3);
  size_t len;
  const char *pixels = lg_checklstring(L, 4, fn, 4, &len);
  Sink s = {NULL, 0, 0, 0};
  lg_nomore(L, fn, 4, 0);
  if (w < 1 || w > MAX_SIDE) return lg_argerror(L, fn, 1, "width %I: expected 1..%d", w, MAX_SIDE);
  if (h < 1 || h > MAX_SIDE) return lg_argerror(L, fn, 2, "height %I: expected 1..%d", h, MAX_SIDE);
  if (c < 1 || c > 4) return lg_argerror(L, fn, 3, "channels %I: expected 1, 2, 3 or 4", c);
  if ((size_t)w * (size_t)h * (size_t)c != len)
    return lg_argerror(L, fn, 4, "expected %I bytes (%I x %I x %I), got %I",
                       w * h * c, w, h, c, (lua_Integer)len);
  if (!encode(&s, (const unsigned char *)pixels, (png_uint_32)w, (png_uint_32)h, (int)c)) {
    free(s.data);
    return lg_error(L, fn, "libpng could not encode the image (out of memory?)");
  }
  lua_pushlstring(L, (const char *)s.data, s.len);
  free(s.data);
  return 1;
}

static const char *kind_of(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISDIR(m)) return "a folder";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return "not a regular file";
}

/* gpu.write_file(path, data) -> path */
static int png_write_file(lua_State *L) {
  const char *fn = "write_file";
  const char *path = (lg_checklstring(L, 1, fn, 1, NULL), lg_path(L, 1, 1, fn));
  size_t len;
  const char *data = lg_checklstring(L, 2, fn, 2, &len);
  struct stat st;
  lg_SaveFile save;
  int exists;
  lg_nomore(L, fn, 2, 0);
  exists = lstat(path, &st) == 0;
  if (path[0] == '\0') return lg_argerror(L, fn, 1, "expected a path, got an empty string");
  if (!exists && errno != ENOENT)
    return lg_error(L, fn, "cannot write '%s': %s", path, strerror(errno));
  if (exists && !S_ISREG(st.st_mode))
    return lg_error(L, fn, "'%s' is %s; not written (give the path of a new or regular file)",
                    path, kind_of(st.st_mode));
  if (!lg_save_open(&save, path, 0))
    return lg_error(L, fn, "cannot write '%s': %s", path, lg_save_why(&save, errno));
  if (!lg_save_close(&save, lg_save_write(&save, data, len)))
    return lg_error(L, fn, "cannot write '%s': %s", path, strerror(errno));
  lua_pushvalue(L, 1);
  return 1;
}

static const luaL_Reg png_functions[] = {
  {"encode_png", png_encode}, {"write_file", png_write_file}, {NULL, NULL}
};

void lg_open_png(lua_State *L) {
  luaL_setfuncs(L, png_functions, 0);
}
