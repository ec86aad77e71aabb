/*
** matmul_common.cl: what the kernels of luagpu.matmul that take parameters
** (matmul_reg.cl, matmul_packed.cl) share. luagpu.matmul puts it in front of
** their source rather than #including it (see source in
** lua/luagpu/matmul_plan.lua), so that they build where only the kernel
** sources embedded in the build exist.
**
** Defines: REAL (float or double; default float), FMA (use fma() rather
** than mad(): CPUs, where mad() may not fuse).
*/
#ifndef REAL
#define REAL float
#endif

#ifdef FMA
#define MAD(a, b, c) fma(a, b, c)
#else
#define MAD(a, b, c) mad(a, b, c)
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define PRAGMA_(x) _Pragma(#x)
#define UNROLL(n) PRAGMA_(unroll n)

/* The vector of REAL of width w (1: REAL itself), and its j-th scalar (j a
** constant). VTYPE pastes with a macro of its own, not CAT: VTYPE4 expands
** to CAT(REAL, 4), which a CAT still being expanded would leave as it is. */
#define VTYPE1 REAL
#define VTYPE2 CAT(REAL, 2)
#define VTYPE4 CAT(REAL, 4)
#define VTYPE8 CAT(REAL, 8)
#define VTYPE16 CAT(REAL, 16)
#define VTYPE_(w) VTYPE##w
#define VTYPE(w) VTYPE_(w)
#define ELEM1(v, j) (v)
#define ELEM2(v, j) ((j) == 0 ? (v).s0 : (v).s1)
#define ELEM4(v, j) ((j) < 2 ? ELEM2((v).lo, (j)) : ELEM2((v).hi, (j) - 2))
#define ELEM8(v, j) ((j) < 4 ? ELEM4((v).lo, (j)) : ELEM4((v).hi, (j) - 4))
#define ELEM16(v, j) ((j) < 8 ? ELEM8((v).lo, (j)) : ELEM8((v).hi, (j) - 8))
#define ELEM(w, v, j) CAT(ELEM, w)(v, j)
