/*
** npy.c: NumPy .npy files. a:save(path) writes format 1.0, little-endian,
** C order; gpu.load(path [, type]) reads formats 1.0, 2.0 and 3.0 of every
** numeric dtype luagpu has (and bool, as uchar), in either byte order.
** Vector arrays are stored with a trailing dimension of their width (float3
** as 3: the padding lane is not written); gpu.load(path, "float4") takes
** that dimension back as the vector.
*/
#define _XOPEN_SOURCE 700   /* fdopen, fseeko */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "internal.h"

#define NPYFILE_MT "luagpu.NpyFile"
#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
#define MAX_HEADER (1 << 20)   /* NumPy writes well under 1 KiB */
#define MAX_NDIM 64            /* NumPy allows 32 (64 since 2.0) */

static int host_is_le(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 1;
}

static void swap_bytes(void *data, size_t n, size_t size) {
  unsigned char *p = (unsigned char *)data, t;
  size_t i, j;
  if (size == 1) return;
  for (i = 0; i < n; i++, p += size) {
    for (j = 0; j < size / 2; j++) {
      t = p[j];
      p[j] = p[size - 1 - j];
      p[size - 1 - j] = t;
    }
  }
}

/* ------------------------------------------------------------- dtypes */

static const struct { char kind; int size; lg_Scalar s; } dtypes[] = {
  {'i', 1, LG_CHAR}, {'u', 1, LG_UCHAR}, {'b', 1, LG_UCHAR},
  {'i', 2, LG_SHORT}, {'u', 2, LG_USHORT}, {'i', 4, LG_INT}, {'u', 4, LG_UINT},
  {'i', 8, LG_LONG}, {'u', 8, LG_ULONG}, {'f', 4, LG_FLOAT}, {'f', 8, LG_DOUBLE},
};

/* "<f4" and the like to a scalar type; sets *swap when the data's byte order
** is not the host's. Returns 0 for what luagpu has no type for. */
static int parse_descr(const char *d, lg_Scalar *s, int *swap) {
  char order = '=';
  size_t i;
  int size = 0;
  if (strchr("<>|=", d[0]) != NULL && d[0] != '\0') order = *d++;
  if (d[0] == '\0' || d[1] < '1' || d[1] > '9') return 0;
  if (d[2] == '\0') size = d[1] - '0';
  else return 0;
  for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
    if (dtypes[i].kind == d[0] && dtypes[i].size == size) {
      *s = dtypes[i].s;
      *swap = size > 1 && ((order == '<' && !host_is_le()) || (order == '>' && host_is_le()));
      return 1;
    }
  }
  return 0;
}

static void write_descr(lg_Scalar s, char *buf) {
  size_t size = lg_scalar_size(s);
  char kind = lg_scalar_isfloat(s) ? 'f'
            : (s == LG_UCHAR || s == LG_USHORT || s == LG_UINT || s == LG_ULONG) ? 'u' : 'i';
  sprintf(buf, "%c%c%d", size == 1 ? '|' : host_is_le() ? '<' : '>', kind, (int)size);
}

/* ------------------------------------------------------------ a:save */

/* Writes the scalars of a (the real lanes only) to f; returns 0 on a write error. */
static int write_data(FILE *f, const lg_Array *a) {
  unsigned char chunk[1 << 16];
  size_t ss = lg_scalar_size(a->type.scalar), per = sizeof chunk / ss, i, n;
  if (a->type.width != 3)
    return fwrite(a->data, 1, a->bytes, f) == a->bytes;
  for (i = 0; i < a->nscalars; i += n) {
    size_t j;
    n = a->nscalars - i < per ? a->nscalars - i : per;
    for (j = 0; j < n; j++) memcpy(chunk + j * ss, lg_array_scalar(a, i + j), ss);
    if (fwrite(chunk, ss, n, f) != n) return 0;
  }
  return 1;
}

/* Writes the header and a's data to f; returns 0 with errno set on failure. */
static int write_npy(FILE *f, const char *header, size_t padded, const lg_Array *a) {
  int ok = fwrite(header, 1, padded, f) == padded && write_data(f, a), err = errno;
  if (fclose(f) != 0 && ok) return 0;
  errno = err;
  return ok;
}

/* Writes the file at path (through lg_save_open: a regular file, or a new
** one, by a temporary file renamed over it, so a failed write leaves the
** old file whole; anything else in place). Returns 0 with errno set, and
** *why a message of luagpu's to give in place of strerror (or NULL). */
static int save_file(const char *path, const char *header, size_t padded, const lg_Array *a,
                     const char **why) {
  lg_SaveFile s;
  FILE *f;
  int ok;
  *why = NULL;
  if (!lg_save_open(&s, path, 0)) {
    *why = s.why;
    return 0;
  }
  if ((f = fdopen(s.fd, "wb")) == NULL) {
    lg_save_close(&s, 0);            /* keeps fdopen's errno */
    return 0;
  }
  s.fd = -1;                         /* write_npy closes it */
  ok = write_npy(f, header, padded, a);
  return lg_save_close(&s, ok);
}

/* The shape that a:save writes, into shape (LG_MAXDIM sizes); returns its
** dimension count. Argument 3, when given, is a table of at most LG_MAXDIM
** sizes (read raw) whose product is a's element count ({} for a 0-d file
** of one element); else a's own shape. */
static int save_shape(lua_State *L, const char *fn, const lg_Array *a, size_t *shape) {
  lua_Integer n, i, v;
  size_t count = 1;
  int isint, zero = 0, over = 0;
  if (lua_isnoneornil(L, 3)) {
    memcpy(shape, a->shape, (size_t)a->ndim * sizeof *shape);
    return a->ndim;
  }
  if (lua_type(L, 3) != LUA_TTABLE) return lg_typeerror(L, fn, 2, 3, "a shape (a table of sizes)");
  n = (lua_Integer)lua_rawlen(L, 3);
  if (n > LG_MAXDIM)
    return lg_argerror(L, fn, 2, "%I dimensions are too many (at most %d)", n, LG_MAXDIM);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, 3, i);
    v = lua_tointegerx(L, -1, &isint);
    lua_pop(L, 1);
    if (!isint || v < 0) return lg_argerror(L, fn, 2, "size %I: expected an integer >= 0", i);
    shape[i - 1] = (size_t)v;
    if (v == 0) zero = 1;
    else if (count > a->count / (size_t)v) over = 1;    /* more than a's count */
    else count *= (size_t)v;
  }
  if (zero ? a->count != 0 : (over || count != a->count))
    return lg_argerror(L, fn, 2, "the shape does not hold the array's %I elements",
                       (lua_Integer)a->count);
  return (int)n;
}

/* a:save(path [, shape]): writes a as a .npy file (format 1.0), of a's
** shape or the one given (save_shape) */
static int npy_save(lua_State *L) {
  static const char *const fn = "array:save";
  lg_Array *a = lg_checkarray(L, 1);
  const char *path;
  char header[1024], descr[8], *p;
  const char *why;
  size_t len, padded, shape[LG_MAXDIM];
  int d, ndim;
  if (lua_type(L, 2) != LUA_TSTRING) return lg_typeerror(L, fn, 1, 2, "a file path");
  path = lg_path(L, 2, 1, fn);
  lg_nomore(L, fn, 3, 1);
  ndim = save_shape(L, fn, a, shape);
  write_descr(a->type.scalar, descr);
  p = header + 10;
  p += sprintf(p, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (d = 0; d < ndim; d++)
    p += sprintf(p, "%s%zu", d > 0 ? ", " : "", shape[d]);
  if (a->type.width > 1) p += sprintf(p, "%s%d", ndim > 0 ? ", " : "", a->type.width);
  p += sprintf(p, "%s), }", ndim + (a->type.width > 1) == 1 ? "," : "");
  len = (size_t)(p - header) + 1;                       /* with the final '\n' */
  padded = (len + 63) / 64 * 64;
  memset(p, ' ', padded - len);
  header[padded - 1] = '\n';
  memcpy(header, MAGIC, MAGIC_LEN);
  header[6] = 1;                                        /* version 1.0 */
  header[7] = 0;
  header[8] = (char)((padded - 10) & 0xff);
  header[9] = (char)((padded - 10) >> 8);
  errno = 0;
  if (!save_file(path, header, padded, a, &why))
    return lg_error(L, fn, "%s: %s", path, why != NULL ? why : strerror(errno ? errno : EIO));
  return 0;
}

/* ------------------------------------------------------- header parsing */

typedef struct Header {
  lg_Scalar s;
  int swap, fortran, ndim;
  int has_descr, has_order, has_shape;
  size_t shape[MAX_NDIM];
  char descr[40];
  char err[160];               /* set when parsing fails */
} Header;

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static const char *bad(Header *h, const char *what) {
  snprintf(h->err, sizeof h->err, "corrupt header: %s", what);
  return NULL;
}

/* A Python string literal in '' or "" (without escapes) into buf. */
static const char *parse_str(Header *h, const char *p, char *buf, size_t size) {
  char q = *p;
  size_t n = 0;
  if (q != '\'' && q != '"') return bad(h, "expected a quoted string");
  for (p++; *p != q; p++) {
    if (*p == '\0') return bad(h, "unterminated string");
    if (n + 1 < size) buf[n++] = *p;
  }
  buf[n] = '\0';
  return p + 1;
}

/* (d1, d2, ...) with Python 2's 3L accepted */
static const char *parse_shape(Header *h, const char *p) {
  if (*p != '(') return bad(h, "'shape' is not a tuple");
  p = skip_ws(p + 1);
  h->ndim = 0;
  while (*p != ')') {
    size_t v = 0;
    if (*p < '0' || *p > '9') return bad(h, "'shape' holds something other than sizes");
    for (; *p >= '0' && *p <= '9'; p++) {
      if (v > (SIZE_MAX - 9) / 10) return bad(h, "a size in 'shape' is too large");
      v = v * 10 + (size_t)(*p - '0');
    }
    if (*p == 'L') p++;
    if (h->ndim == MAX_NDIM) return bad(h, "'shape' has too many dimensions");
    h->shape[h->ndim++] = v;
    p = skip_ws(p);
    if (*p == ',') p = skip_ws(p + 1);
    else if (*p != ')') return bad(h, "'shape' is not a tuple of sizes");
  }
  return p + 1;
}

/* The header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (3,), } */
static int parse_header(Header *h, const char *p) {
  char key[32];
  p = skip_ws(p);
  if (*p++ != '{') return bad(h, "not a dictionary") != NULL;
  for (;;) {
    p = skip_ws(p);
    if (*p == '}') break;
    if ((p = parse_str(h, p, key, sizeof key)) == NULL) return 0;
    p = skip_ws(p);
    if (*p++ != ':') return bad(h, "expected ':' after a key") != NULL;
    p = skip_ws(p);
    if (strcmp(key, "descr") == 0) {
      if (*p == '[') {                   /* a structured dtype */
        const char *q = p;
        int depth = 0;
        do {
          depth += (*q == '[') - (*q == ']');
          q++;
        } while (depth > 0 && *q != '\0');
        snprintf(h->err, sizeof h->err, "unsupported dtype %.*s%s (structured arrays are "
                 "not supported)", q - p > 60 ? 60 : (int)(q - p), p, q - p > 60 ? "..." : "");
        return 0;
      }
      if ((p = parse_str(h, p, h->descr, sizeof h->descr)) == NULL) return 0;
      h->has_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (strncmp(p, "True", 4) == 0) { h->fortran = 1; p += 4; }
      else if (strncmp(p, "False", 5) == 0) { h->fortran = 0; p += 5; }
      else return bad(h, "'fortran_order' is neither True nor False") != NULL;
      h->has_order = 1;
    } else if (strcmp(key, "shape") == 0) {
      if ((p = parse_shape(h, p)) == NULL) return 0;
      h->has_shape = 1;
    } else {
      snprintf(h->err, sizeof h->err, "corrupt header: unexpected key '%s'", key);
      return 0;
    }
    p = skip_ws(p);
    if (*p == ',') p++;
    else if (*p != '}') return bad(h, "expected ',' or '}'") != NULL;
  }
  if (!h->has_descr) return bad(h, "no 'descr'") != NULL;
  if (!h->has_order) return bad(h, "no 'fortran_order'") != NULL;
  if (!h->has_shape) return bad(h, "no 'shape'") != NULL;
  if (!parse_descr(h->descr, &h->s, &h->swap)) {
    snprintf(h->err, sizeof h->err, "unsupported dtype '%s' (luagpu reads bool, int8 to "
             "int64, uint8 to uint64, float32 and float64)", h->descr);
    return 0;
  }
  if (h->fortran) {
    snprintf(h->err, sizeof h->err, "arrays in Fortran order are not supported (save "
             "numpy.ascontiguousarray(x) instead)");
    return 0;
  }
  return 1;
}

/* ------------------------------------------------------------ gpu.load */

typedef struct NpyFile { FILE *f; } NpyFile;

static int npyfile_close(lua_State *L) {
  NpyFile *nf = (NpyFile *)luaL_checkudata(L, 1, NPYFILE_MT);
  if (nf->f != NULL) {
    fclose(nf->f);
    nf->f = NULL;
  }
  return 0;
}

/* Closes the file and raises "luagpu: gpu.load: PATH: message". */
static int load_fail(lua_State *L, NpyFile *nf, const char *path, const char *fmt, ...) {
  va_list ap;
  const char *msg;
  if (nf->f != NULL) {
    fclose(nf->f);
    nf->f = NULL;
  }
  va_start(ap, fmt);
  msg = lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return lg_error(L, "gpu.load", "%s: %s", path, msg);
}

static uint32_t le_u32(const unsigned char *p, int n) {
  uint32_t v = 0;
  while (n-- > 0) v = (v << 8) | p[n];
  return v;
}

/* A short read of the data, whose size was checked before: the file shrank
** meanwhile (errno is stale then), or a read error (ferror). */
static int read_fail(lua_State *L, NpyFile *nf, const char *path) {
  if (ferror(nf->f)) return load_fail(L, nf, path, "read error: %s", strerror(errno));
  return load_fail(L, nf, path, "truncated: the file ended before its data (was it "
                   "truncated while being read?)");
}

/* Reads the prelude and the header of the file, leaving it at the data. */
static void read_header(lua_State *L, NpyFile *nf, const char *path, Header *h) {
  unsigned char pre[12];
  size_t lensize, hlen, got = fread(pre, 1, 8, nf->f);
  char *text;
  /* a file cut short within the prelude is a truncated .npy file, not another kind */
  if (got > 0 && got < 8 && memcmp(pre, MAGIC, got < MAGIC_LEN ? got : MAGIC_LEN) == 0)
    load_fail(L, nf, path, "truncated header");
  if (got != 8 || memcmp(pre, MAGIC, MAGIC_LEN) != 0)
    load_fail(L, nf, path, "not a .npy file (no \\x93NUMPY magic string)");
  if (pre[6] < 1 || pre[6] > 3)
    load_fail(L, nf, path, "unsupported .npy format version %d.%d", pre[6], pre[7]);
  lensize = pre[6] == 1 ? 2 : 4;
  if (fread(pre + 8, 1, lensize, nf->f) != lensize)
    load_fail(L, nf, path, "truncated header");
  hlen = le_u32(pre + 8, (int)lensize);
  if (hlen > MAX_HEADER)
    load_fail(L, nf, path, "corrupt header: %I bytes long", (lua_Integer)hlen);
  text = (char *)lua_newuserdatauv(L, hlen + 1, 0);
  if (fread(text, 1, hlen, nf->f) != hlen)
    load_fail(L, nf, path, "truncated header");
  text[hlen] = '\0';
  if (strlen(text) != hlen) load_fail(L, nf, path, "corrupt header: it holds a NUL byte");
  memset(h, 0, sizeof *h);
  if (!parse_header(h, text)) load_fail(L, nf, path, "%s", h->err);
  lua_pop(L, 1);
}

/* Pushes the file's shape as Python writes it: "(3, 4)", "(3,)", "()". */
static const char *push_tuple(lua_State *L, const Header *h) {
  luaL_Buffer b;
  char num[32];
  int i;
  luaL_buffinit(L, &b);
  luaL_addchar(&b, '(');
  for (i = 0; i < h->ndim; i++) {
    snprintf(num, sizeof num, "%s%zu", i > 0 ? ", " : "", h->shape[i]);
    luaL_addstring(&b, num);
  }
  luaL_addstring(&b, h->ndim == 1 ? ",)" : ")");
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/* gpu.load(path [, type]): the array in a .npy file, and the file's shape
** (a table: {} for a 0-d file, whose array has shape {1}). With a vector
** type the last dimension of the file must be its width; with a scalar
** type other than the file's, the values are converted with the usual
** checks. */
static int npy_load(lua_State *L) {
  static const char *const fn = "gpu.load";
  const char *path, *pfn;
  lg_Type want = {LG_FLOAT, 1};
  lg_Type file;
  Header h;
  NpyFile *nf;
  lg_Array *a;
  size_t nscalars, avail, shape[LG_MAXDIM], *fshape;
  off_t here, end;
  int ndim, fd, has_type = !lua_isnoneornil(L, 2);
  char tname[LG_TYPENAME_MAX];
  struct stat st;
  if (lua_type(L, 1) != LUA_TSTRING) return lg_typeerror(L, fn, 1, 1, "a file path");
  path = lg_path(L, 1, 1, fn);
  if (has_type) want = lg_checktype(L, 2, fn, 2);
  lg_nomore(L, fn, 2, 0);
  lua_settop(L, 2);
  nf = (NpyFile *)lua_newuserdatauv(L, sizeof(NpyFile), 0);      /* 3: closes on error */
  nf->f = NULL;
  luaL_setmetatable(L, NPYFILE_MT);
  lua_toclose(L, 3);
  /* opened without blocking, then checked: a FIFO (or a device) would block
  ** a plain open until a writer came, and cannot be read as a .npy file */
  fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return lg_error(L, fn, "%s: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (nf->f = fdopen(fd, "rb")) == NULL) {
    close(fd);
    return lg_argerror(L, fn, 1, "'%s' is not a file", path);
  }
  read_header(L, nf, path, &h);
  pfn = lua_pushfstring(L, "%s: %s", fn, path);      /* errors from here on name the file */
  file.scalar = h.s;
  file.width = 1;
  if (!has_type) want.scalar = h.s;
  /* the shape of the result: the file's, less the vector's dimension */
  fshape = h.shape;
  ndim = h.ndim;
  if (want.width > 1) {
    if (ndim < 1 || h.shape[ndim - 1] != (size_t)want.width)
      return load_fail(L, nf, path, "%s needs a last dimension of %d, the file's shape is %s",
                       lg_type_name(want, tname), want.width, push_tuple(L, &h));
    ndim--;
  }
  if (ndim > LG_MAXDIM)
    return load_fail(L, nf, path, "the array has %d dimensions (luagpu arrays have at most %d)",
                     ndim, LG_MAXDIM);
  if (ndim == 0) { shape[0] = 1; ndim = 1; }
  else memcpy(shape, fshape, (size_t)ndim * sizeof(size_t));
  nscalars = lg_shape_count(L, want, ndim, shape, pfn) * (size_t)want.width;
  if (lg_scalar_size(h.s) > lg_type_size(want))      /* the file's data must be addressable too */
    lg_shape_count(L, file, 1, &nscalars, pfn);
  /* the data must all be there before anything is allocated for it */
  here = ftello(nf->f);
  if (here < 0 || fseeko(nf->f, 0, SEEK_END) != 0 || (end = ftello(nf->f)) < 0 ||
      fseeko(nf->f, here, SEEK_SET) != 0)
    return load_fail(L, nf, path, "%s", strerror(errno));
  avail = (size_t)(end - here);
  if (avail / lg_scalar_size(h.s) < nscalars)
    return load_fail(L, nf, path, "truncated: the shape needs %I bytes of data, the file has %I",
                     (lua_Integer)(nscalars * lg_scalar_size(h.s)), (lua_Integer)avail);
  if (want.scalar == h.s && want.width != 3) {
    a = lg_newarray_for(L, want, ndim, shape, pfn, 0);
    if (fread(a->data, 1, a->bytes, nf->f) != a->bytes)
      return read_fail(L, nf, path);
    if (h.swap) swap_bytes(a->data, nscalars, lg_scalar_size(h.s));
  } else {
    lg_Array *raw = lg_newarray_for(L, file, 1, &nscalars, pfn, 0);
    if (fread(raw->data, 1, raw->bytes, nf->f) != raw->bytes)
      return read_fail(L, nf, path);
    if (h.swap) swap_bytes(raw->data, nscalars, lg_scalar_size(h.s));
    fclose(nf->f);
    nf->f = NULL;
    a = lg_newarray_for(L, want, ndim, shape, pfn, want.width == 3);
    lg_array_convert(L, a, raw, pfn, "");
  }
  lua_createtable(L, h.ndim, 0);
  for (ndim = 0; ndim < h.ndim; ndim++) {
    if (h.shape[ndim] <= (size_t)LUA_MAXINTEGER) lua_pushinteger(L, (lua_Integer)h.shape[ndim]);
    else lua_pushnumber(L, (lua_Number)h.shape[ndim]);    /* beside a size 0 */
    lua_rawseti(L, -2, ndim + 1);
  }
  return 2;        /* the file is closed with slot 3 when this returns */
}

void lg_open_npy(lua_State *L) {
  static const luaL_Reg array_methods[] = {{"save", npy_save}, {NULL, NULL}};
  static const luaL_Reg file_meta[] = {
    {"__gc", npyfile_close}, {"__close", npyfile_close}, {NULL, NULL}
  };
  lg_newclass(L, NPYFILE_MT, NULL, file_meta);
  lg_add_methods(L, LG_ARRAY_MT, array_methods);
  lua_pushcfunction(L, npy_load);
  lua_setfield(L, -2, "load");
}
