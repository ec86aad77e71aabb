-- luarocks: builds the module with luagpu's Makefile (`make all`) and
-- installs it with `make install-rock`: the C modules (luagpu, and
-- luagpu_mpi where mpicc is found) into the rock's lib folder, the helpers
-- (luagpu.reduce, luagpu.matmul, luagpu.mpi, ...) into its lua folder, the
-- luagpu program into its bin folder; luagpu.h, luagpu.pc, the man page,
-- the kernels and the Jupyter kernelspec into the rock's own folder
-- (`luarocks show --rock-dir luagpu`). Needs an OpenCL ICD loader and
-- headers (Debian: ocl-icd-opencl-dev opencl-headers) and libpng-dev.
-- Debian's luarocks defaults to Lua 5.1: name 5.4.
--   luarocks --lua-version 5.4 make packaging/luagpu-0.1.0-1.rockspec
rockspec_format = "3.0"
package = "luagpu"
version = "0.1.0-1"
source = {
  url = "git+https://github.com/luagpu/luagpu",
  tag = "v0.1.0",
}
description = {
  summary = "GPU computing from Lua 5.4 over OpenCL",
  detailed = [[
Devices, typed buffers with views, asynchronous events, kernels built from
OpenCL C, reductions and matrix products, a REPL with completion, a command
trace (Chrome JSON, SVG) and a debug mode with canaries.]],
  license = "MIT",
  labels = {"gpu", "opencl"},
}
dependencies = {
  "lua == 5.4",
}
external_dependencies = {
  OPENCL = {header = "CL/cl.h", library = "OpenCL"},
  PNG = {header = "png.h", library = "png16"},
}
build = {
  type = "make",
  build_target = "all",
  build_variables = {
    CFLAGS = "$(CFLAGS)",
    LUA_CFLAGS = "-I$(LUA_INCDIR)",
    CL_LIBS = "-L$(OPENCL_LIBDIR) -lOpenCL",
    BUILD = "build/rock",
  },
  install_target = "install-rock",
  install_variables = {
    BUILD = "build/rock",
    ROCK_LIBDIR = "$(LIBDIR)",
    ROCK_LUADIR = "$(LUADIR)",
    ROCK_BINDIR = "$(BINDIR)",
    ROCK_PREFIX = "$(PREFIX)",
  },
}
