/*
** mpi.c: luagpu_mpi, the C half of luagpu.mpi (lua/luagpu/mpi.lua): Open
** MPI's world communicator as Lua functions over luagpu's host arrays.
** A module of its own (build/luagpu_mpi.so, linked with libmpi), not part
** of luagpu.so: it reaches host arrays through the table of C functions
** luagpu leaves in the registry (LUAGPU_CAPI in luagpu.h). The Lua half
** stages device buffers and tensors through host arrays, makes the output
** arrays and checks what is plain Lua; here every value is checked again.
**
** Collectives first agree on what every rank brings (an allreduce of the
** element count and type), so ranks that disagree all raise the same error
** instead of some of them waiting forever.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "luagpu.h"
#include <lauxlib.h>

#define CAPI_KEY LUAGPU_CAPI

/* The scalar types of luagpu with their MPI datatypes, in one order (the
** index is what ranks compare). */
static const char *const type_names[] = {"char", "uchar", "short", "ushort", "int", "uint",
                                         "long", "ulong", "float", "double", NULL};

static MPI_Datatype mpi_type(int i) {
  switch (i) {
    case 0: return MPI_SIGNED_CHAR;
    case 1: return MPI_UNSIGNED_CHAR;
    case 2: return MPI_SHORT;
    case 3: return MPI_UNSIGNED_SHORT;
    case 4: return MPI_INT;
    case 5: return MPI_UNSIGNED;
    case 6: return MPI_INT64_T;
    case 7: return MPI_UINT64_T;
    case 8: return MPI_FLOAT;
    default: return MPI_DOUBLE;
  }
}

static const char *const op_names[] = {"sum", "prod", "min", "max", NULL};

static MPI_Op mpi_op(int i) {
  switch (i) {
    case 0: return MPI_SUM;
    case 1: return MPI_PROD;
    case 2: return MPI_MIN;
    default: return MPI_MAX;
  }
}

/* A host array as MPI sees it: data, count of scalars and the type index. */
typedef struct Data {
  void *p;
  int n;
  int type;
} Data;

static int fail(lua_State *L, const char *fn, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushfstring(L, "luagpu: mpi.%s: ", fn);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}

/* Raises for an MPI failure code rc of call. */
static void check(lua_State *L, const char *fn, const char *call, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (rc == MPI_SUCCESS) return;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  text[len] = '\0';
  fail(L, fn, "%s failed: %s (error %d)", call, len > 0 ? text : "unknown error", rc);
}

static void check_live(lua_State *L, const char *fn) {
  int done = 1;
  MPI_Finalized(&done);
  if (done) fail(L, fn, "MPI was finalized");
}

/* The host array argument #arg of fn. */
static Data to_data(lua_State *L, const char *fn, int arg) {
  const luagpu_CAPI *capi;
  const char *scalar = NULL;
  size_t n = 0;
  Data d;
  lua_getfield(L, LUA_REGISTRYINDEX, CAPI_KEY);
  capi = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (capi == NULL || capi->version < 1) fail(L, fn, "luagpu is not loaded");
  d.p = capi->to_array(L, arg, &n, &scalar);
  if (d.p == NULL)
    fail(L, fn, "argument #%d: expected a luagpu.Array, got %s", arg, luaL_typename(L, arg));
  if (n > INT_MAX)
    fail(L, fn, "argument #%d: %I values are too many for one MPI message (at most %d)", arg,
          (lua_Integer)n, INT_MAX);
  d.n = (int)n;
  for (d.type = 0; type_names[d.type] != NULL; d.type++)
    if (strcmp(type_names[d.type], scalar) == 0) break;
  if (type_names[d.type] == NULL) fail(L, fn, "argument #%d: unknown type %s", arg, scalar);
  return d;
}

/* The integer at arg, raising "luagpu: mpi.FN: argument #ARG: expected a
** WHAT (an integer), got ..." (luaL_checkinteger's message names no
** luagpu call). */
static lua_Integer integer_arg(lua_State *L, const char *fn, int arg, const char *what) {
  int ok = 0;
  lua_Integer v = lua_tointegerx(L, arg, &ok);
  if (!ok || lua_type(L, arg) != LUA_TNUMBER)
    fail(L, fn, "argument #%d: expected %s (an integer), got %s", arg, what,
         lua_type(L, arg) == LUA_TNUMBER ? lua_tostring(L, arg) : luaL_typename(L, arg));
  return v;
}

/* The index in names of the string at arg (what: what it names). */
static int option_arg(lua_State *L, const char *fn, int arg, const char *const names[],
                      const char *what) {
  const char *s = lua_type(L, arg) == LUA_TSTRING ? lua_tostring(L, arg) : NULL;
  int i;
  for (i = 0; s != NULL && names[i] != NULL; i++)
    if (strcmp(names[i], s) == 0) return i;
  return fail(L, fn, "argument #%d: expected %s, got %s", arg, what,
              s != NULL ? lua_pushfstring(L, "\"%s\"", s) : luaL_typename(L, arg));
}

static int check_rank(lua_State *L, const char *fn, int arg, const char *what) {
  int size;
  lua_Integer r = integer_arg(L, fn, arg, "a rank");
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (r < 0 || r >= size)
    fail(L, fn, "argument #%d: %s %I is out of range (0 to %d)", arg, what, r, size - 1);
  return (int)r;
}

/* A tag at arg: absent gives dflt; else 0 to MPI_TAG_UB. */
static int check_tag(lua_State *L, const char *fn, int arg, int dflt) {
  lua_Integer t;
  int *ub, flag = 0;
  if (lua_isnoneornil(L, arg)) return dflt;
  t = integer_arg(L, fn, arg, "a tag");
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (t < 0 || t > (flag ? *ub : 32767))
    fail(L, fn, "argument #%d: tag %I is out of range (0 to %d)", arg, t, flag ? *ub : 32767);
  return (int)t;
}

/* Every rank learns whether all brought the same count and type, and
** asked for the same operation (op, -1 for none), root (-1 for none) and
** first dim (rows, -1 for none); raises on all ranks if not, naming the
** smallest and largest given. *chunk (when chunk is not NULL) becomes the
** largest any rank proposed: the size of the pieces all ranks then move. */
static void agree_all(lua_State *L, const char *fn, const Data *d, int op, int root, int rows,
                      int *chunk) {
  int c = chunk != NULL ? *chunk : 0;
  int mine[12] = {d->n, -d->n, d->type, -d->type, op, -op, root, -root, rows, -rows, c, -c};
  int all[12];
  check(L, fn, "MPI_Allreduce", MPI_Allreduce(mine, all, 12, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (all[2] != -all[3])
    fail(L, fn, "the ranks bring different element types (%s to %s): every rank must "
         "pass the same type", type_names[-all[3]], type_names[all[2]]);
  if (all[0] != -all[1])
    fail(L, fn, "the ranks bring different counts (%d to %d values): every rank must pass "
         "the same count", -all[1], all[0]);
  if (all[4] != -all[5])
    fail(L, fn, "the ranks ask for different operations (%s to %s): every rank must ask for "
         "the same", op_names[-all[5]], op_names[all[4]]);
  if (all[6] != -all[7])
    fail(L, fn, "the ranks name different roots (%d to %d): every rank must name the same",
         -all[7], all[6]);
  if (all[8] != -all[9])
    fail(L, fn, "the ranks bring different first dims (%d to %d): every rank must pass the "
         "same shape", -all[9], all[8]);
  if (chunk != NULL) *chunk = all[10];
}

static void agree(lua_State *L, const char *fn, const Data *d, int op, int root) {
  agree_all(L, fn, d, op, root, -1, NULL);
}

/* out (argument #arg) must hold n scalars of in's type. */
static Data check_out(lua_State *L, const char *fn, int arg, const Data *in, long long n) {
  Data o = to_data(L, fn, arg);
  if (o.type != in->type)
    fail(L, fn, "argument #%d: expected an array of %s, got one of %s", arg,
          type_names[in->type], type_names[o.type]);
  if ((long long)o.n != n)
    fail(L, fn, "argument #%d: expected %I value%s, got %d", arg, (lua_Integer)n,
         n == 1 ? "" : "s", o.n);
  return o;
}

static int m_barrier(lua_State *L) {
  check_live(L, "barrier");
  check(L, "barrier", "MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
  return 0;
}

static int m_wtime(lua_State *L) {
  lua_pushnumber(L, MPI_Wtime());
  return 1;
}

/* send(array, dest [, tag]) */
static int m_send(lua_State *L) {
  Data d;
  int dest, tag;
  check_live(L, "send");
  d = to_data(L, "send", 1);
  dest = check_rank(L, "send", 2, "destination rank");
  tag = check_tag(L, "send", 3, 0);
  check(L, "send", "MPI_Send", MPI_Send(d.p, d.n, mpi_type(d.type), dest, tag, MPI_COMM_WORLD));
  return 0;
}

/* probe(type, source|nil, tag|nil): waits for a message; returns its count
** of values of type, its source and its tag. */
static int m_probe(lua_State *L) {
  int type, src, tag, count = 0;
  MPI_Status st;
  check_live(L, "recv");
  type = option_arg(L, "recv", 1, type_names, "a scalar type name (\"float\", \"int\", ...)");
  src = lua_isnoneornil(L, 2) ? MPI_ANY_SOURCE : check_rank(L, "recv", 2, "source rank");
  tag = check_tag(L, "recv", 3, MPI_ANY_TAG);
  check(L, "recv", "MPI_Probe", MPI_Probe(src, tag, MPI_COMM_WORLD, &st));
  check(L, "recv", "MPI_Get_count", MPI_Get_count(&st, mpi_type(type), &count));
  if (count == MPI_UNDEFINED)
    fail(L, "recv", "rank %d sent a message whose size is no whole number of %s values",
          st.MPI_SOURCE, type_names[type]);
  lua_pushinteger(L, count);
  lua_pushinteger(L, st.MPI_SOURCE);
  lua_pushinteger(L, st.MPI_TAG);
  return 3;
}

/* recv(array, source|nil, tag|nil): fills array with a message of exactly
** as many values; returns the source and the tag. */
static int m_recv(lua_State *L) {
  Data d;
  int src, tag, count = 0;
  MPI_Status st;
  check_live(L, "recv");
  d = to_data(L, "recv", 1);
  src = lua_isnoneornil(L, 2) ? MPI_ANY_SOURCE : check_rank(L, "recv", 2, "source rank");
  tag = check_tag(L, "recv", 3, MPI_ANY_TAG);
  check(L, "recv", "MPI_Probe", MPI_Probe(src, tag, MPI_COMM_WORLD, &st));
  check(L, "recv", "MPI_Get_count", MPI_Get_count(&st, mpi_type(d.type), &count));
  if (count != d.n)
    fail(L, "recv", "rank %d sent %s%d values of %s (tag %d), expected %d; the message is "
          "left unreceived", st.MPI_SOURCE, count == MPI_UNDEFINED ? "a size that is no whole "
          "number of " : "", count == MPI_UNDEFINED ? 0 : count, type_names[d.type], st.MPI_TAG,
          d.n);
  check(L, "recv", "MPI_Recv", MPI_Recv(d.p, d.n, mpi_type(d.type), st.MPI_SOURCE, st.MPI_TAG,
                                        MPI_COMM_WORLD, &st));
  lua_pushinteger(L, st.MPI_SOURCE);
  lua_pushinteger(L, st.MPI_TAG);
  return 2;
}

/* bcast(array, root): the root's values into every rank's array. */
static int m_bcast(lua_State *L) {
  Data d;
  int root;
  check_live(L, "bcast");
  d = to_data(L, "bcast", 1);
  root = check_rank(L, "bcast", 2, "root rank");
  agree(L, "bcast", &d, -1, root);
  check(L, "bcast", "MPI_Bcast", MPI_Bcast(d.p, d.n, mpi_type(d.type), root, MPI_COMM_WORLD));
  return 0;
}

/* reduce(array, op, out|nil, root): out (on the root only) receives the
** elementwise op of every rank's array. allreduce(array, op, out). */
static int reduce(lua_State *L, const char *fn, int all) {
  Data d, o = {NULL, 0, 0};
  int op, root = 0, rank;
  check_live(L, fn);
  d = to_data(L, fn, 1);
  op = option_arg(L, fn, 2, op_names, "\"sum\", \"prod\", \"min\" or \"max\"");
  if (!all) root = check_rank(L, fn, 4, "root rank");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (all || rank == root) o = check_out(L, fn, 3, &d, d.n);
  agree(L, fn, &d, op, all ? -1 : root);
  if (all)
    check(L, fn, "MPI_Allreduce", MPI_Allreduce(d.p, o.p, d.n, mpi_type(d.type), mpi_op(op),
                                                MPI_COMM_WORLD));
  else
    check(L, fn, "MPI_Reduce", MPI_Reduce(d.p, o.p, d.n, mpi_type(d.type), mpi_op(op), root,
                                          MPI_COMM_WORLD));
  return 0;
}

static int m_reduce(lua_State *L) { return reduce(L, "reduce", 0); }
static int m_allreduce(lua_State *L) { return reduce(L, "allreduce", 1); }

/* gather(array, out|nil, root): out (on the root only) receives every
** rank's array, in rank order. allgather(array, out). */
static int gather(lua_State *L, const char *fn, int all) {
  Data d, o = {NULL, 0, 0};
  int root = 0, rank, size;
  check_live(L, fn);
  d = to_data(L, fn, 1);
  if (!all) root = check_rank(L, fn, 3, "root rank");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if ((long long)d.n * size > INT_MAX)
    fail(L, fn, "%d ranks of %d values are too many for one MPI call (at most %d)", size,
          d.n, INT_MAX);
  if (all || rank == root) o = check_out(L, fn, 2, &d, (long long)d.n * size);
  agree(L, fn, &d, -1, all ? -1 : root);
  if (all)
    check(L, fn, "MPI_Allgather", MPI_Allgather(d.p, d.n, mpi_type(d.type), o.p, d.n,
                                                mpi_type(d.type), MPI_COMM_WORLD));
  else
    check(L, fn, "MPI_Gather", MPI_Gather(d.p, d.n, mpi_type(d.type), o.p, d.n,
                                          mpi_type(d.type), root, MPI_COMM_WORLD));
  return 0;
}

static int m_gather(lua_State *L) { return gather(L, "gather", 0); }
static int m_allgather(lua_State *L) { return gather(L, "allgather", 1); }

/* agree(fn, array | type, count|nil, op|nil, root|nil, rows|nil, chunk):
** the agreement of a collective (agree_all above) for what a rank brings:
** a host array, or a scalar type name and a count of scalars (a device
** buffer not yet staged). Returns the chunk all ranks use (scalars; 0:
** one piece). fn names the call ("allreduce") in errors. */
static int m_agree(lua_State *L) {
  static const char *const fns[] = {"allreduce", "reduce", "bcast", "allgather", "gather",
                                    "reduce_scatter", NULL};
  const char *fn = fns[option_arg(L, "agree", 1, fns, "a collective's name")];
  Data d;
  int op = -1, root = -1, rows = -1, chunk;
  lua_Integer c, r;
  check_live(L, fn);
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_Integer n = integer_arg(L, fn, 3, "a count");
    d.type = option_arg(L, fn, 2, type_names, "a scalar type name (\"float\", \"int\", ...)");
    if (n < 0 || n > INT_MAX)
      fail(L, fn, "%I values are too many for one MPI call (at most %d)", n, INT_MAX);
    d.n = (int)n;
    d.p = NULL;
  } else {
    d = to_data(L, fn, 2);
  }
  if (!lua_isnoneornil(L, 4))
    op = option_arg(L, fn, 4, op_names, "\"sum\", \"prod\", \"min\" or \"max\"");
  if (!lua_isnoneornil(L, 5)) root = check_rank(L, fn, 5, "root rank");
  if (!lua_isnoneornil(L, 6)) {
    r = integer_arg(L, fn, 6, "a first dim");
    rows = r < 0 || r > INT_MAX ? INT_MAX : (int)r;
  }
  c = integer_arg(L, fn, 7, "a chunk size");
  chunk = c < 0 ? 0 : c > INT_MAX ? INT_MAX : (int)c;
  agree_all(L, fn, &d, op, root, rows, &chunk);
  lua_pushinteger(L, chunk);
  return 1;
}

/* allreduce_part(array, op, out|nil, first, count): the allreduce of
** scalars first .. first + count - 1 (0-based) of array into the same
** scalars of out, or in place without out. No agreement: the caller's
** agree() came first, and every rank calls it with the same pieces. */
static int m_allreduce_part(lua_State *L) {
  const char *fn = "allreduce";
  Data d, o;
  int op;
  lua_Integer first, count;
  check_live(L, fn);
  d = to_data(L, fn, 1);
  op = option_arg(L, fn, 2, op_names, "\"sum\", \"prod\", \"min\" or \"max\"");
  o = lua_isnoneornil(L, 3) ? d : check_out(L, fn, 3, &d, d.n);
  first = integer_arg(L, fn, 4, "a first scalar");
  count = integer_arg(L, fn, 5, "a count");
  if (first < 0 || count < 0 || first > d.n || count > d.n - first)
    fail(L, fn, "scalars %I to %I are out of range (0 to %d)", first, first + count - 1,
         d.n - 1);
  {
    size_t esize = 0;
    MPI_Aint lb, extent;
    MPI_Type_get_extent(mpi_type(d.type), &lb, &extent);
    esize = (size_t)extent;
    check(L, fn, "MPI_Allreduce",
          MPI_Allreduce(o.p == d.p ? MPI_IN_PLACE : (char *)d.p + (size_t)first * esize,
                        (char *)o.p + (size_t)first * esize, (int)count, mpi_type(d.type),
                        mpi_op(op), MPI_COMM_WORLD));
  }
  return 0;
}

/* bcast_part(array, root, first, count): the root's scalars first ..
** first + count - 1 (0-based) into every rank's array. No agreement (as
** allreduce_part). */
static int m_bcast_part(lua_State *L) {
  const char *fn = "bcast";
  Data d;
  int root;
  lua_Integer first, count;
  MPI_Aint lb, extent;
  check_live(L, fn);
  d = to_data(L, fn, 1);
  root = check_rank(L, fn, 2, "root rank");
  first = integer_arg(L, fn, 3, "a first scalar");
  count = integer_arg(L, fn, 4, "a count");
  if (first < 0 || count < 0 || first > d.n || count > d.n - first)
    fail(L, fn, "scalars %I to %I are out of range (0 to %d)", first, first + count - 1,
         d.n - 1);
  MPI_Type_get_extent(mpi_type(d.type), &lb, &extent);
  check(L, fn, "MPI_Bcast", MPI_Bcast((char *)d.p + (size_t)first * (size_t)extent, (int)count,
                                      mpi_type(d.type), root, MPI_COMM_WORLD));
  return 0;
}

/* reduce_scatter(array, op, out): out receives rank r's share (the r-th of
** size equal parts) of the elementwise op of every rank's array. The
** caller checked that the count divides by the size. */
static int m_reduce_scatter(lua_State *L) {
  const char *fn = "reduce_scatter";
  Data d, o;
  int op, size;
  check_live(L, fn);
  d = to_data(L, fn, 1);
  op = option_arg(L, fn, 2, op_names, "\"sum\", \"prod\", \"min\" or \"max\"");
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  agree(L, fn, &d, op, -1);
  if (d.n % size != 0)
    fail(L, fn, "%d values do not split into %d equal shares", d.n, size);
  o = check_out(L, fn, 3, &d, d.n / size);
  check(L, fn, "MPI_Reduce_scatter_block",
        MPI_Reduce_scatter_block(d.p, o.p, d.n / size, mpi_type(d.type), mpi_op(op),
                                 MPI_COMM_WORLD));
  return 0;
}

/* abort([code]): ends every rank of the job. */
static int m_abort(lua_State *L) {
  lua_Integer code = lua_isnoneornil(L, 1) ? 1 : integer_arg(L, "abort", 1, "an exit code");
  check_live(L, "abort");
  MPI_Abort(MPI_COMM_WORLD, (int)(code & 0xff));
  return 0;
}

/* Finalizes MPI once, at lua_close (the sentinel's __gc) or at exit (a
** script's os.exit without closing the state). */
static void finalize(void) {
  int init = 0, done = 1;
  MPI_Initialized(&init);
  MPI_Finalized(&done);
  if (init && !done) MPI_Finalize();
}

/* At exit: a process of a job of several ranks that exits with a failure
** status (a script's os.exit(1), os.exit(false)) ends the whole job, as a
** script that raises does: MPI_Finalize would wait for the other ranks,
** which may be waiting in a collective for this one, for ever. */
static void finalize_at_exit(int status, void *arg) {
  int init = 0, done = 1, size = 1;
  (void)arg;
  MPI_Initialized(&init);
  MPI_Finalized(&done);
  if (init && !done && status != 0 && MPI_Comm_size(MPI_COMM_WORLD, &size) == MPI_SUCCESS &&
      size > 1)
    MPI_Abort(MPI_COMM_WORLD, status & 0xff);
  finalize();
}

static int sentinel_gc(lua_State *L) {
  (void)L;
  finalize();
  return 0;
}

/* Keeps this library mapped until the process ends, so that the on_exit
** handler it registers never points into unmapped code after lua_close
** unloads C modules. */
static void pin_library(void) {
  Dl_info info;
  if (dladdr((void *)pin_library, &info) && info.dli_fname != NULL)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

int luaopen_luagpu_mpi(lua_State *L);

int luaopen_luagpu_mpi(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"barrier", m_barrier}, {"wtime", m_wtime}, {"send", m_send}, {"probe", m_probe},
    {"recv", m_recv}, {"bcast", m_bcast}, {"reduce", m_reduce}, {"allreduce", m_allreduce},
    {"gather", m_gather}, {"allgather", m_allgather}, {"abort", m_abort},
    {"agree", m_agree}, {"allreduce_part", m_allreduce_part}, {"bcast_part", m_bcast_part},
    {"reduce_scatter", m_reduce_scatter}, {NULL, NULL}
  };
  int init = 0, done = 0, provided, rank, size, len = 0;
  char name[MPI_MAX_PROCESSOR_NAME];
  MPI_Initialized(&init);
  MPI_Finalized(&done);
  if (done) return luaL_error(L, "luagpu: mpi: MPI was finalized");
  if (!init) {
    static int registered = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return luaL_error(L, "luagpu: mpi: MPI_Init_thread failed (%d)", rc);
    pin_library();
    if (!registered) registered = on_exit(finalize_at_exit, NULL) == 0;
    /* a sentinel in the registry: its __gc finalizes at lua_close */
    lua_newuserdatauv(L, 1, 0);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, sentinel_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "luagpu.mpi.sentinel");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS) len = 0;
  luaL_newlib(L, fns);
  lua_pushinteger(L, rank);
  lua_setfield(L, -2, "rank");
  lua_pushinteger(L, size);
  lua_setfield(L, -2, "size");
  lua_pushlstring(L, name, (size_t)len);
  lua_setfield(L, -2, "processor_name");
  return 1;
}
