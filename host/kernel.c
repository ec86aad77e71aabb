/*
** kernel.c: Program objects (what dev:build makes, program.c): prog.kernels,
** prog.log, prog.NAME, prog:kernel(NAME), release; Kernel objects
** (prog.NAME): k.name, k.args and the limits of a kernel on its device; and
** the argument metadata every build records (and the program cache keeps,
** since drivers need not report argument info for programs loaded from
** binaries). Binding and launching are in call.c.
**
** The metadata of a program is text, one line a kernel or parameter:
**   kernel<TAB>NAME<TAB>NARGS
**   arg<TAB>ADDRESS<TAB>ACCESS<TAB>QUALIFIERS<TAB>TYPE<TAB>NAME
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

lg_Program *lg_checkprogram(lua_State *L, int idx) {
  lg_Program *p = luaL_checkudata(L, idx, LG_PROGRAM_MT);
  if (p->prog == NULL) lg_released_error(L, idx, "program");
  return p;
}

/* ------------------------------------------------------------ metadata */

typedef struct Text { char *p; size_t n, cap; int failed; } Text;

static void add(Text *t, const char *s, size_t n) {
  if (t->failed) return;
  if (t->n + n + 1 > t->cap) {
    size_t cap = (t->n + n + 1) * 2;
    char *p = realloc(t->p, cap);
    if (p == NULL) { t->failed = 1; return; }
    t->p = p;
    t->cap = cap;
  }
  memcpy(t->p + t->n, s, n);
  t->n += n;
  t->p[t->n] = '\0';
}

static void adds(Text *t, const char *s) { add(t, s, strlen(s)); }

/* Adds a kernel-info string, tabs and newlines (never in valid names)
** turned into spaces; "?" when the driver does not tell. */
static void add_info(Text *t, cl_kernel k, cl_uint arg, cl_kernel_arg_info what) {
  char buf[512];
  size_t n = 0, i;
  if (clGetKernelArgInfo(k, arg, what, sizeof buf - 1, buf, &n) != CL_SUCCESS) n = 0;
  if (n > 0 && buf[n - 1] == '\0') n--;
  buf[n] = '\0';
  for (i = 0; i < n; i++)
    if (buf[i] == '\t' || buf[i] == '\n') buf[i] = ' ';
  adds(t, n > 0 ? buf : "?");
}

/* The metadata's word for an address qualifier. */
static const char *space_name(cl_kernel_arg_address_qualifier aq) {
  return aq == CL_KERNEL_ARG_ADDRESS_GLOBAL ? "global"
       : aq == CL_KERNEL_ARG_ADDRESS_LOCAL ? "local"
       : aq == CL_KERNEL_ARG_ADDRESS_CONSTANT ? "constant" : "private";
}

static void add_arg(Text *t, cl_kernel k, cl_uint i) {
  cl_kernel_arg_address_qualifier aq = 0;
  cl_kernel_arg_access_qualifier acc = 0;
  cl_kernel_arg_type_qualifier tq = 0;
  const char *space, *access = "none";
  clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL);
  clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ACCESS_QUALIFIER, sizeof acc, &acc, NULL);
  clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof tq, &tq, NULL);
  space = space_name(aq);
  if (acc == CL_KERNEL_ARG_ACCESS_READ_ONLY) access = "read_only";
  else if (acc == CL_KERNEL_ARG_ACCESS_WRITE_ONLY) access = "write_only";
  else if (acc == CL_KERNEL_ARG_ACCESS_READ_WRITE) access = "read_write";
  adds(t, "arg\t");
  adds(t, space);
  adds(t, "\t");
  adds(t, access);
  adds(t, "\t");
  if (tq & CL_KERNEL_ARG_TYPE_CONST) adds(t, "const ");
  if (tq & CL_KERNEL_ARG_TYPE_RESTRICT) adds(t, "restrict ");
  if (tq & CL_KERNEL_ARG_TYPE_VOLATILE) adds(t, "volatile ");
  if (t->n > 0 && t->p[t->n - 1] == ' ') t->p[--t->n] = '\0';
  adds(t, "\t");
  add_info(t, k, i, CL_KERNEL_ARG_TYPE_NAME);
  adds(t, "\t");
  add_info(t, k, i, CL_KERNEL_ARG_NAME);
  adds(t, "\n");
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of prog's kernels, ';'-separated, from the PTX that NVIDIA's
** OpenCL gives as a program's binary (its ".entry NAME(" lines): for a
** program built for one device of a context of several, that driver
** answers CL_PROGRAM_KERNEL_NAMES with CL_INVALID_PROGRAM_EXECUTABLE.
** Returns a malloc'd string, or NULL with *err set. */
static char *names_from_ptx(cl_program prog, cl_int *err) {
  cl_uint nd = 0, j, use = 0;
  size_t *sizes = NULL, at = 0;
  unsigned char **bins = NULL;
  char *text = NULL, *list = NULL, *p;
  *err = clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, NULL);
  if (*err == CL_SUCCESS && nd == 0) *err = CL_INVALID_PROGRAM_EXECUTABLE;
  if (*err == CL_SUCCESS && ((sizes = calloc(nd, sizeof *sizes)) == NULL ||
                             (bins = calloc(nd, sizeof *bins)) == NULL))
    *err = CL_OUT_OF_HOST_MEMORY;
  if (*err == CL_SUCCESS)
    *err = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, nd * sizeof *sizes, sizes, NULL);
  for (j = 0; *err == CL_SUCCESS && j < nd; j++)
    if (sizes[j] > sizes[use]) use = j;
  if (*err == CL_SUCCESS && sizes[use] == 0) *err = CL_INVALID_PROGRAM_EXECUTABLE;
  if (*err == CL_SUCCESS && ((text = malloc(sizes[use] + 1)) == NULL ||
                             (list = malloc(sizes[use] + 1)) == NULL))
    *err = CL_OUT_OF_HOST_MEMORY;
  if (*err == CL_SUCCESS) {
    bins[use] = (unsigned char *)text;
    *err = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, nd * sizeof *bins, bins, NULL);
  }
  if (*err == CL_SUCCESS) {
    text[sizes[use]] = '\0';
    for (p = strstr(text, ".entry"); p != NULL; p = strstr(p, ".entry")) {
      p += 6;
      if (*p != ' ' && *p != '\t') continue;
      while (*p == ' ' || *p == '\t') p++;
      if (at > 0) list[at++] = ';';
      while (*p == '_' || *p == '$' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
             (*p >= 'A' && *p <= 'Z'))
        list[at++] = *p++;
    }
    list[at] = '\0';
    if (at == 0) *err = CL_INVALID_PROGRAM_EXECUTABLE;
  }
  free(text);
  free(sizes);
  free(bins);
  if (*err != CL_SUCCESS) {
    free(list);
    return NULL;
  }
  return list;
}

/* Every kernel of prog by its name (CL_PROGRAM_KERNEL_NAMES, else the
** binary's PTX entries; then clCreateKernel): for drivers whose
** clCreateKernelsInProgram fails on a program built for one device of a
** context of several (NVIDIA's gives CL_INVALID_KERNEL_DEFINITION for any
** device but the first, while clCreateKernel works). Sets *nk and *ks
** (calloc'd); returns the error. */
static cl_int kernels_by_name(cl_program prog, cl_uint *nk, cl_kernel **ks) {
  size_t len = 0;
  char *list = NULL, *name, *next;
  cl_uint n = 0, i;
  cl_int err = clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &len);
  *nk = 0;
  *ks = NULL;
  if (err == CL_SUCCESS && (list = malloc(len + 1)) == NULL) return CL_OUT_OF_HOST_MEMORY;
  if (err == CL_SUCCESS) {
    err = clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, len, list, NULL);
    list[len] = '\0';
  }
  if (err != CL_SUCCESS) {
    free(list);
    if ((list = names_from_ptx(prog, &err)) == NULL) return err;
  }
  for (i = 0; list[i] != '\0'; i++) n += list[i] == ';';
  if (list[0] != '\0') n++;
  if (n > 0 && (*ks = calloc(n, sizeof **ks)) == NULL) err = CL_OUT_OF_HOST_MEMORY;
  for (name = list; err == CL_SUCCESS && name != NULL; name = next) {
    next = strchr(name, ';');
    if (next != NULL) *next++ = '\0';
    if (name[0] != '\0' && *nk < n) (*ks)[(*nk)++] = clCreateKernel(prog, name, &err);
  }
  free(list);
  return err;
}

void lg_program_names(lua_State *L, int fields) {
  const char *m;
  int n = 0;
  lua_getfield(L, fields, "meta");
  m = lua_tostring(L, -1);
  lua_newtable(L);
  while (m != NULL && *m) {
    const char *eol = strchr(m, '\n'), *tab;
    if (strncmp(m, "kernel\t", 7) == 0 && (tab = strchr(m + 7, '\t')) != NULL &&
        (eol == NULL || tab < eol)) {
      lua_pushlstring(L, m + 7, (size_t)(tab - m - 7));
      lua_rawseti(L, -2, ++n);
    }
    m = eol != NULL ? eol + 1 : NULL;
  }
  lua_setfield(L, fields, "names");
  lua_pop(L, 1);
}

void lg_program_meta(lua_State *L, cl_program prog, const char *fn) {
  cl_uint nk = 0, i, j, na;
  cl_kernel *ks = NULL;
  char **names = NULL;
  Text t = {NULL, 0, 0, 0};
  /* LUAGPU_KERNELS_BY_NAME=1 takes the by-name path on every driver (its spec) */
  const char *force = getenv("LUAGPU_KERNELS_BY_NAME");
  cl_int err = force != NULL && force[0] == '1' ? CL_INVALID_KERNEL_DEFINITION
                                                    : clCreateKernelsInProgram(prog, 0, NULL, &nk);
  if (err == CL_SUCCESS && nk > 0) {
    ks = calloc(nk, sizeof *ks);
    if (ks == NULL) err = CL_OUT_OF_HOST_MEMORY;
    else err = clCreateKernelsInProgram(prog, nk, ks, NULL);
  }
  if (err == CL_INVALID_KERNEL_DEFINITION) {
    free(ks);
    err = kernels_by_name(prog, &nk, &ks);
  }
  if (err == CL_SUCCESS && nk > 0 && (names = calloc(nk, sizeof *names)) == NULL)
    err = CL_OUT_OF_HOST_MEMORY;
  /* name each kernel: "NAME\0" then the cl_kernel index, sorted by name */
  for (i = 0; err == CL_SUCCESS && i < nk; i++) {
    size_t n = 0;
    if ((err = clGetKernelInfo(ks[i], CL_KERNEL_FUNCTION_NAME, 0, NULL, &n)) != CL_SUCCESS)
      break;
    if ((names[i] = malloc(n + 1 + sizeof(cl_uint))) == NULL) { err = CL_OUT_OF_HOST_MEMORY; break; }
    err = clGetKernelInfo(ks[i], CL_KERNEL_FUNCTION_NAME, n, names[i], NULL);
    names[i][n] = '\0';
    memcpy(names[i] + strlen(names[i]) + 1, &i, sizeof i);
  }
  if (err == CL_SUCCESS && nk > 0) qsort(names, nk, sizeof *names, by_name);
  for (i = 0; err == CL_SUCCESS && i < nk; i++) {
    cl_uint ki;
    char num[32];
    memcpy(&ki, names[i] + strlen(names[i]) + 1, sizeof ki);
    na = 0;
    err = clGetKernelInfo(ks[ki], CL_KERNEL_NUM_ARGS, sizeof na, &na, NULL);
    snprintf(num, sizeof num, "\t%u\n", (unsigned)na);
    adds(&t, "kernel\t");
    adds(&t, names[i]);
    adds(&t, num);
    for (j = 0; j < na; j++) add_arg(&t, ks[ki], j);
  }
  for (i = 0; ks != NULL && i < nk; i++)
    if (ks[i] != NULL) clReleaseKernel(ks[i]);
  for (i = 0; names != NULL && i < nk; i++) free(names[i]);
  free(ks);
  free(names);
  if (err == CL_SUCCESS && t.failed) err = CL_OUT_OF_HOST_MEMORY;
  if (err != CL_SUCCESS) {
    free(t.p);
    lg_clerror(L, lua_pushfstring(L, "%s: clCreateKernelsInProgram", fn), err, NULL);
  }
  lua_pushlstring(L, t.p != NULL ? t.p : "", t.n);
  free(t.p);
}

/* ------------------------------------------------------------- kernels */

static void classify(lg_ArgInfo *a) {
  char t[64];
  size_t n;
  int ptr;
  snprintf(t, sizeof t, "%s", a->type_name);
  n = strlen(t);
  while (n > 0 && t[n - 1] == ' ') t[--n] = '\0';
  ptr = n > 0 && t[n - 1] == '*';
  if (ptr) t[--n] = '\0';
  while (n > 0 && t[n - 1] == ' ') t[--n] = '\0';
  a->typed = strchr(t, '*') == NULL && lg_parse_type(t, &a->type);
  if (ptr && (strcmp(a->address, "global") == 0 || strcmp(a->address, "constant") == 0))
    a->kind = LG_ARG_BUFFER;
  else if (ptr && strcmp(a->address, "local") == 0)
    a->kind = LG_ARG_LOCAL;
  else if (!ptr && a->typed && strcmp(a->address, "private") == 0)
    a->kind = LG_ARG_SCALAR;
  else
    a->kind = LG_ARG_OTHER;
}

/* Splits the next tab- or newline-ended field of *p in place. */
static char *field(char **p) {
  char *s = *p, *e = s + strcspn(s, "\t\n");
  if (*e != '\0') *e++ = '\0';
  *p = e;
  return s;
}

/* The argument count of the "kernel\tNAME\tN" line whose N starts at p, when
** N is a plain decimal below LG_MAX_KERNEL_ARGS ending its line; else -1. */
static long meta_count(const char *p) {
  long n = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9'; p++, digits++) {
    n = n * 10 + (*p - '0');
    if (n >= LG_MAX_KERNEL_ARGS) return -1;
  }
  return digits > 0 && (*p == '\n' || *p == '\0') ? n : -1;
}

/* 1 when [s, e) holds exactly n lines "arg\t" + five more tab-separated
** fields each, as lg_program_meta writes them. */
static int meta_args_ok(const char *s, const char *e, long n) {
  long lines = 0;
  while (s < e) {
    const char *eol = memchr(s, '\n', (size_t)(e - s));
    int tabs = 0;
    if (eol == NULL) eol = e;
    if ((size_t)(eol - s) < 4 || strncmp(s, "arg\t", 4) != 0) return 0;
    for (; s < eol; s++) tabs += *s == '\t';
    if (tabs != 5) return 0;
    lines++;
    s = eol + 1;
  }
  return lines == n;
}

int lg_meta_ok(const char *meta, size_t n) {
  const char *m = meta, *e = meta + n;
  if (memchr(meta, '\0', n) != NULL) return 0;
  while (m < e) {
    const char *tab, *eol, *next;
    long na;
    if ((size_t)(e - m) < 7 || strncmp(m, "kernel\t", 7) != 0) return 0;
    eol = memchr(m, '\n', (size_t)(e - m));
    if (eol == NULL) return 0;
    tab = memchr(m + 7, '\t', (size_t)(eol - m - 7));
    if (tab == NULL || tab == m + 7 || (na = meta_count(tab + 1)) < 0) return 0;
    for (next = eol + 1; next < e && strncmp(next, "kernel\t", 7) != 0;) {
      const char *nl = memchr(next, '\n', (size_t)(e - next));
      next = nl != NULL ? nl + 1 : e;
    }
    if (!meta_args_ok(eol + 1, next, na)) return 0;
    m = next;
  }
  return 1;
}

/* Raises naming fn when the metadata of k (from a binary or a cache entry)
** disagrees with the driver about an argument's address space or type:
** they decide how a call binds it, and a pointer bound as a number would
** let the kernel write anywhere. A driver that reports no argument info
** for the program (CL_KERNEL_ARG_INFO_NOT_AVAILABLE) is taken at the
** metadata's word: a binary is code that runs as given. */
static void check_args(lua_State *L, lg_Kernel *k, const char *fn) {
  char buf[256], *type;
  cl_uint i;
  for (i = 0; i < k->nargs; i++) {
    const lg_ArgInfo *a = &k->args[i];
    cl_kernel_arg_address_qualifier aq = 0;
    size_t n = 0;
    int same;
    if (clGetKernelArgInfo(k->k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL)
            != CL_SUCCESS ||
        clGetKernelArgInfo(k->k, i, CL_KERNEL_ARG_TYPE_NAME, 0, NULL, &n) != CL_SUCCESS)
      return;
    type = n < sizeof buf ? buf : malloc(n + 1);
    if (type == NULL) return;
    if (clGetKernelArgInfo(k->k, i, CL_KERNEL_ARG_TYPE_NAME, n, type, NULL) != CL_SUCCESS) n = 0;
    type[n] = '\0';
    same = n == 0 || (strcmp(space_name(aq), a->address) == 0 && strcmp(type, a->type_name) == 0);
    if (!same) lua_pushstring(L, type);
    if (type != buf) free(type);
    if (!same)
      lg_error(L, fn, "a damaged binary: kernel %s's argument %d is %s %s in the binary, the "
               "metadata says %s %s", k->name, (int)i + 1, space_name(aq), lua_tostring(L, -1),
               a->address, a->type_name);
  }
}

lg_Kernel *lg_newkernel(lua_State *L, int progidx, const char *name, const char *fn) {
  lg_Program *p = lg_checkprogram(L, progidx);
  const char *meta, *start = NULL, *end, *m;
  lg_Kernel *k;
  lg_ArgInfo *args;
  char *pool;
  size_t nlen = strlen(name);
  long nargs = 0;
  cl_uint i, real = 0;
  cl_int err;
  int kidx;
  progidx = lua_absindex(L, progidx);
  lua_getiuservalue(L, progidx, 3);
  lua_getfield(L, -1, "meta");
  meta = lua_tostring(L, -1);
  for (m = meta; m != NULL && *m; m = strchr(m, '\n') ? strchr(m, '\n') + 1 : NULL)
    if (strncmp(m, "kernel\t", 7) == 0 && strncmp(m + 7, name, nlen) == 0 && m[7 + nlen] == '\t') {
      start = m;
      break;
    }
  if (start == NULL) lg_error(L, fn, "no kernel named '%s'", name);
  nargs = meta_count(start + 8 + nlen);
  start = strchr(start, '\n') != NULL ? strchr(start, '\n') + 1 : start + strlen(start);
  for (end = start; *end && strncmp(end, "kernel\t", 7) != 0;)
    end = strchr(end, '\n') ? strchr(end, '\n') + 1 : end + strlen(end);
  if (nargs < 0 || !meta_args_ok(start, end, nargs))   /* from a binary or a cache file */
    lg_error(L, fn, "damaged kernel metadata for '%s'", name);

  k = lua_newuserdatauv(L, sizeof *k, 2);    /* released until clCreateKernel */
  memset(k, 0, sizeof *k);
  k->dev = p->dev;
  luaL_setmetatable(L, LG_KERNEL_MT);
  kidx = lua_gettop(L);
  args = lua_newuserdatauv(L, (size_t)nargs * sizeof *args + nlen + 1 + (size_t)(end - start)
                             + 1, 0);
  pool = (char *)(args + nargs);
  memcpy(pool, name, nlen + 1);
  k->name = pool;
  pool += nlen + 1;
  memcpy(pool, start, (size_t)(end - start));
  pool[end - start] = '\0';
  for (i = 0; i < (cl_uint)nargs; i++) {
    field(&pool);
    args[i].address = field(&pool);
    args[i].access = field(&pool);
    args[i].qualifiers = field(&pool);
    args[i].type_name = field(&pool);
    args[i].name = field(&pool);
    classify(&args[i]);
  }
  k->args = args;
  k->nargs = (cl_uint)nargs;
  lua_setiuservalue(L, kidx, 2);
  lua_pushvalue(L, progidx);
  lua_setiuservalue(L, kidx, 1);
  snprintf(k->command, sizeof k->command, "kernel %s", name);
  k->k = clCreateKernel(p->prog, name, &err);
  if (k->k == NULL || err != CL_SUCCESS) {
    k->k = NULL;
    lg_clerror(L, lua_pushfstring(L, "%s: clCreateKernel", fn), err, "kernel '%s'", name);
  }
  if (clGetKernelInfo(k->k, CL_KERNEL_NUM_ARGS, sizeof real, &real, NULL) == CL_SUCCESS &&
      real != (cl_uint)nargs)
    lg_error(L, fn, "damaged kernel metadata for '%s' (%d arguments, the kernel has %d)", name,
             (int)nargs, (int)real);
  check_args(L, k, fn);
  if (clGetKernelWorkGroupInfo(k->k, p->dev->id, CL_KERNEL_WORK_GROUP_SIZE,
                               sizeof k->work_group_size, &k->work_group_size, NULL) != CL_SUCCESS)
    k->work_group_size = p->dev->max_work_group_size;
  lua_replace(L, -3);   /* the kernel in place of the fields table */
  lua_pop(L, 1);
  return k;
}

static lg_Kernel *check_kernel(lua_State *L, int idx) {
  lg_Kernel *k = luaL_checkudata(L, idx, LG_KERNEL_MT);
  if (k->k == NULL) lg_released_error(L, idx, "kernel");
  return k;
}

/* k(...): binds a call (call.c). */
static int k_call(lua_State *L) {
  check_kernel(L, 1);
  lg_bindcall(L, 1, 2, lua_gettop(L));
  return 1;
}

static void push_args(lua_State *L, lg_Kernel *k) {
  cl_uint i;
  lua_createtable(L, (int)k->nargs, 0);
  for (i = 0; i < k->nargs; i++) {
    const lg_ArgInfo *a = &k->args[i];
    lua_createtable(L, 0, 5);
    lua_pushstring(L, a->name);       lua_setfield(L, -2, "name");
    lua_pushstring(L, a->type_name);  lua_setfield(L, -2, "type");
    lua_pushstring(L, a->address);    lua_setfield(L, -2, "address");
    lua_pushstring(L, a->access);     lua_setfield(L, -2, "access");
    lua_pushstring(L, a->qualifiers); lua_setfield(L, -2, "qualifiers");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

/* Fields: name, args, nargs, program, and the kernel's limits on its device
** (work_group_size, preferred_work_group_size_multiple, local_mem_size,
** private_mem_size). */
static int k_index(lua_State *L) {
  lg_Kernel *k = check_kernel(L, 1);
  const char *key = lua_tostring(L, 2);
  cl_kernel_work_group_info what;
  if (lg_pushmethod(L, 1, 2)) return 1;
  if (key == NULL) return 0;
  if (strcmp(key, "name") == 0) { lua_pushstring(L, k->name); return 1; }
  if (strcmp(key, "args") == 0) { push_args(L, k); return 1; }
  if (strcmp(key, "nargs") == 0) { lua_pushinteger(L, k->nargs); return 1; }
  if (strcmp(key, "program") == 0) { lua_getiuservalue(L, 1, 1); return 1; }
  if (strcmp(key, "work_group_size") == 0) {
    lua_pushinteger(L, (lua_Integer)k->work_group_size);
    return 1;
  }
  if (strcmp(key, "preferred_work_group_size_multiple") == 0)
    what = CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE;
  else if (strcmp(key, "local_mem_size") == 0)
    what = CL_KERNEL_LOCAL_MEM_SIZE;
  else if (strcmp(key, "private_mem_size") == 0)
    what = CL_KERNEL_PRIVATE_MEM_SIZE;
  else
    return 0;
  {
    cl_ulong v = 0;
    size_t sv = 0;
    cl_int err;
    if (what == CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE) {
      err = clGetKernelWorkGroupInfo(k->k, k->dev->id, what, sizeof sv, &sv, NULL);
      v = sv;
    } else {
      err = clGetKernelWorkGroupInfo(k->k, k->dev->id, what, sizeof v, &v, NULL);
    }
    if (err != CL_SUCCESS) return lg_clerror(L, "clGetKernelWorkGroupInfo", err, NULL);
    lua_pushinteger(L, (lua_Integer)v);
  }
  return 1;
}

static int k_gc(lua_State *L) {
  lg_Kernel *k = luaL_checkudata(L, 1, LG_KERNEL_MT);
  if (k->k != NULL) clReleaseKernel(k->k);
  k->k = NULL;
  return 0;
}

/* "luagpu.Kernel saxpy(float a, global const float* x, ...)" */
static int k_tostring(lua_State *L) {
  lg_Kernel *k = luaL_checkudata(L, 1, LG_KERNEL_MT);
  luaL_Buffer b;
  cl_uint i;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, LG_KERNEL_MT " ");
  luaL_addstring(&b, k->name != NULL ? k->name : "?");
  luaL_addchar(&b, '(');
  for (i = 0; i < k->nargs; i++) {
    const lg_ArgInfo *a = &k->args[i];
    if (i > 0) luaL_addstring(&b, ", ");
    if (strcmp(a->address, "private") != 0) {
      luaL_addstring(&b, a->address);
      luaL_addchar(&b, ' ');
    }
    if (a->qualifiers[0] != '\0') {
      luaL_addstring(&b, a->qualifiers);
      luaL_addchar(&b, ' ');
    }
    luaL_addstring(&b, a->type_name);
    luaL_addchar(&b, ' ');
    luaL_addstring(&b, a->name);
  }
  luaL_addchar(&b, ')');
  if (k->k == NULL) luaL_addstring(&b, " (released)");
  luaL_pushresult(&b);
  return 1;
}

/* ------------------------------------------------------------ programs */

/* Pushes the kernel-name list of fields (at fidx) joined with ", ". */
static void push_names(lua_State *L, int fidx) {
  luaL_Buffer b;
  lua_Integer i, n;
  lua_getfield(L, fidx, "names");
  n = (lua_Integer)lua_rawlen(L, -1);
  luaL_buffinit(L, &b);
  for (i = 1; i <= n; i++) {
    if (i > 1) luaL_addstring(&b, ", ");
    lua_rawgeti(L, -2, i);
    luaL_addvalue(&b);
  }
  if (n == 0) luaL_addstring(&b, "none");
  luaL_pushresult(&b);
  lua_remove(L, -2);
}

void lg_push_kernel(lua_State *L, int progidx, const char *name, const char *fn) {
  lua_Integer i, n;
  progidx = lua_absindex(L, progidx);
  lg_checkprogram(L, progidx);
  lua_getiuservalue(L, progidx, 2);
  if (lua_getfield(L, -1, name) == LUA_TUSERDATA) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  lua_getiuservalue(L, progidx, 3);
  lua_getfield(L, -1, "names");
  n = (lua_Integer)lua_rawlen(L, -1);
  for (i = 1; i <= n; i++) {
    int found;
    lua_rawgeti(L, -1, i);
    found = strcmp(lua_tostring(L, -1), name) == 0;
    lua_pop(L, 1);
    if (found) break;
  }
  if (i > n) {
    push_names(L, -2);
    lg_error(L, fn, "no kernel named '%s' (kernels: %s)", name, lua_tostring(L, -1));
  }
  lua_pop(L, 2);
  lg_newkernel(L, progidx, name, fn);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
  lua_remove(L, -2);
}

void lg_check_kernels(lua_State *L, int progidx, const char *fn) {
  lua_Integer i, n;
  progidx = lua_absindex(L, progidx);
  lua_getiuservalue(L, progidx, 3);
  lua_getfield(L, -1, "names");
  n = (lua_Integer)lua_rawlen(L, -1);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    lg_push_kernel(L, progidx, lua_tostring(L, -1), fn);
    lua_pop(L, 2);
  }
  lua_pop(L, 2);
}

/* prog:kernel(name) */
static int prog_kernel(lua_State *L) {
  lg_checkprogram(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING)
    return lg_typeerror(L, "prog:kernel", 1, 2, "a kernel name");
  lg_push_kernel(L, 1, lua_tostring(L, 2), "prog:kernel");
  return 1;
}

/* prog:release(), also __close and __gc: releases the program and its
** kernels (calls bound to them raise when run afterwards). */
static int prog_release(lua_State *L) {
  lg_Program *p = luaL_checkudata(L, 1, LG_PROGRAM_MT);
  if (p->prog == NULL) return 0;
  if (lua_getiuservalue(L, 1, 2) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lg_Kernel *k = luaL_testudata(L, -1, LG_KERNEL_MT);
      if (k != NULL && k->k != NULL) clReleaseKernel(k->k);
      if (k != NULL) k->k = NULL;
      lua_pop(L, 1);
    }
  }
  clReleaseProgram(p->prog);
  p->prog = NULL;
  return 0;
}

/* Fields first (kernels, log, options, file, device, cached), then the
** methods, then kernels by name; anything else raises. */
static int prog_index(lua_State *L) {
  lg_Program *p = luaL_checkudata(L, 1, LG_PROGRAM_MT);
  const char *key;
  if (lua_type(L, 2) == LUA_TSTRING && lg_pushmethod(L, 1, 2)) return 1;
  lg_checkprogram(L, 1);
  key = lua_tostring(L, 2);
  if (lua_type(L, 2) != LUA_TSTRING) {
    lua_getiuservalue(L, 1, 3);
    push_names(L, -1);
    return lg_error(L, "program", "no kernel named %s (kernels: %s)",
                    lg_tolstring(L, 2), lua_tostring(L, -2));
  }
  lua_getiuservalue(L, 1, 3);
  if (strcmp(key, "kernels") == 0) {
    lua_Integer i, n;
    lua_getfield(L, -1, "names");
    n = (lua_Integer)lua_rawlen(L, -1);
    lua_createtable(L, (int)n, 0);
    for (i = 1; i <= n; i++) {
      lua_rawgeti(L, -2, i);
      lua_rawseti(L, -2, i);
    }
    return 1;
  }
  if (strcmp(key, "log") == 0 || strcmp(key, "options") == 0 || strcmp(key, "file") == 0) {
    lua_getfield(L, -1, key);
    return 1;
  }
  if (strcmp(key, "device") == 0) {
    lua_getiuservalue(L, 1, 1);
    return 1;
  }
  if (strcmp(key, "cached") == 0) {
    lua_pushboolean(L, p->from_cache);
    return 1;
  }
  if (strcmp(key, "binary") == 0 && luaL_getmetafield(L, 1, "__binary") == LUA_TFUNCTION) {
    lua_pushvalue(L, 1);            /* binary.c's, called so: it calls this file */
    lua_call(L, 1, 1);
    return 1;
  }
  lua_pop(L, 1);
  lg_push_kernel(L, 1, key, "program");
  return 1;
}

static int prog_tostring(lua_State *L) {
  lg_Program *p = luaL_checkudata(L, 1, LG_PROGRAM_MT);
  if (p->prog == NULL) {
    lua_pushfstring(L, LG_PROGRAM_MT " (released): %p", (void *)p);
    return 1;
  }
  lua_getiuservalue(L, 1, 3);
  push_names(L, -1);
  lua_pushfstring(L, LG_PROGRAM_MT " {%s} on %s: %p", lua_tostring(L, -1), p->dev->name,
                  (void *)p);
  return 1;
}

/* ------------------------------------------------------------- classes */

/* Field writes raise through class.c's default __newindex. */
static const luaL_Reg program_methods[] = {
  {"kernel", prog_kernel}, {"release", prog_release}, {NULL, NULL}
};
static const luaL_Reg program_meta[] = {
  {"__released", lg_handle_released}, {"__index", prog_index}, {"__gc", prog_release},
  {"__close", prog_release}, {"__tostring", prog_tostring}, {NULL, NULL}
};
static const luaL_Reg kernel_meta[] = {
  {"__released", lg_handle_released}, {"__index", k_index}, {"__call", k_call},
  {"__gc", k_gc}, {"__tostring", k_tostring}, {NULL, NULL}
};

void lg_open_kernel(lua_State *L) {
  lg_newclass(L, LG_PROGRAM_MT, program_methods, program_meta);
  lg_newclass(L, LG_KERNEL_MT, NULL, kernel_meta);
  {
    static const char *const program_fields[] = {"kernels", "log", "options", "file", "device",
                                                 "cached", "binary", NULL};
    static const char *const kernel_fields[] = {"name", "args", "nargs", "program",
                                                "work_group_size",
                                                "preferred_work_group_size_multiple",
                                                "local_mem_size", "private_mem_size", NULL};
    lg_class_fields(L, LG_PROGRAM_MT, program_fields);
    lg_class_fields(L, LG_KERNEL_MT, kernel_fields);
  }
  lg_open_call(L);
}
