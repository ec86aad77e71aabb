-- luagpu.matmul_mma: the name luagpu.matmul.mma had before the helpers moved into
-- packages (docs/API.md); kept so that scripts requiring it still work.
return require "luagpu.matmul.mma"
