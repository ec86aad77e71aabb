-- luagpu.matmul_wgmma: the name luagpu.matmul.wgmma had before the helpers moved into
-- packages (docs/API.md); kept so that scripts requiring it still work.
return require "luagpu.matmul.wgmma"
