-- luagpu.tensor_memory: the name luagpu.core.pool had before the helpers moved into
-- packages (docs/API.md); kept so that scripts requiring it still work.
return require "luagpu.core.pool"
