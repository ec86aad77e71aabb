/*
** tensor_transpose.cl: the contiguous copy of a view that swaps the last two
** dims of a contiguous layout (x:t():contiguous(), x:transpose(-1, -2):clone()),
** by tiles of TILE x TILE through local memory, so that both the reads and
** the writes are whole rows of the tile (lua/luagpu/tensor/transpose.lua).
**
** in holds batches of a rows x cols matrix, row-major, from ioff; out gets
** each batch's transpose (cols x rows) from ooff, batch b at b * rows * cols
** in both. A group of TILE x ROWS work-items moves one tile, TILE / ROWS
** elements each; group (gx, gy, b) is the tile at column gx * TILE and row
** gy * TILE of in's batch b. The tile has TILE + 1 columns, so that a
** column of it is spread over the local memory's banks.
**
** The helper prepends T (element type), IDX (uint where every position
** fits 32 bits, else ulong: unsigned, no overflow to assume away), TILE and
** ROWS (ROWS divides TILE).
*/
__kernel void lg_transpose(__global T *out, ulong ooff, __global const T *in, ulong ioff,
                           ulong rows, ulong cols) {
  __local T tile[TILE][TILE + 1];
  IDX b = (IDX)get_group_id(2);
  IDX base = b * (IDX)rows * (IDX)cols;
  IDX c0 = (IDX)get_group_id(0) * TILE, r0 = (IDX)get_group_id(1) * TILE;
  uint lx = get_local_id(0), ly = get_local_id(1);
  IDX c = c0 + lx;
  for (uint k = ly; k < TILE; k += ROWS) {
    IDX r = r0 + k;
    if (r < (IDX)rows && c < (IDX)cols) tile[k][lx] = in[(IDX)ioff + base + r * (IDX)cols + c];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  IDX r = r0 + lx;
  for (uint k = ly; k < TILE; k += ROWS) {
    IDX oc = c0 + k;                       /* out's row: in's column */
    if (oc < (IDX)cols && r < (IDX)rows) out[(IDX)ooff + base + oc * (IDX)rows + r] = tile[lx][k];
  }
}
