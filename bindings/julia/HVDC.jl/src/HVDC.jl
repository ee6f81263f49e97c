"""
    HVDC

Julia binding of hvdc, a Horovod-style distributed training engine (`libhvdc.so.0`).

```julia
using HVDC
HVDC.init()
grad = fill(Float32(HVDC.rank()), 1000)
HVDC.allreduce!(grad; op = HVDC.Average, name = "grad")
HVDC.shutdown()
```

Conventions:
- Arrays are Julia's (column-major). A Julia array of size `(d1, ..., dn)` is the C library's
  row-major tensor of shape `(dn, ..., d1)`, so the ops that split or concatenate "the first
  dimension" (allgather, alltoall, reducescatter) work along Julia's **last** dimension (the
  batch dimension in Flux's convention).
- Accepted arrays: host arrays of `UInt8, Int8, UInt16, Int16, Int32, Int64, Float16, Float32,
  Float64, Bool` stored contiguously (`Array`, contiguous views and reshapes).
- Failures throw [`HVDCError`](@ref) with the status code and the library's message; bad Julia
  arguments throw `ArgumentError` or `DimensionMismatch` naming the argument.
- Every `*_async` call returns a [`Handle`](@ref) that keeps its arrays alive until the op has
  ended; `wait(handle)` returns the op's result. No Julia code ever runs on the engine thread:
  `wait` polls `hvd_test` and yields to other tasks meanwhile.
- Names (`name = "..."`) identify a tensor across ranks; `nothing` gives an automatic name,
  valid only when every rank calls in the same order.
- `HVDC.shared_array(T, dims...)` makes an array in shared host memory: collectives on it
  reduce the local peers' data in place. It outlives `HVDC.shutdown` until it is collected.
- `HVDC.nranks()` is Horovod's `size()` (a function named `size` would hide `Base.size`).
  `HVDC.init`, `HVDC.broadcast!`, `HVDC.join` and the topology queries (`HVDC.rank()`, ...) are
  not exported, to stay clear of `Base` and `LinearAlgebra` names.
"""
module HVDC

using Libdl

include("LibHVDC.jl")
const L = LibHVDC

export HVDCError, Handle, ProcessSet, ReduceOp, Average, Sum, Min, Max, Product
export allreduce!, allreduce, allreduce_async!, grouped_allreduce!, grouped_allreduce_async!
export allgather, allgather_async, broadcast_async!, alltoall, alltoall_async
export reducescatter, reducescatter_async, barrier, barrier_async, poll
export add_process_set, remove_process_set, process_sets

include("errors.jl")
include("lifecycle.jl")
include("process_sets.jl")
include("tensors.jl")
include("handles.jl")
include("collectives.jl")
include("diagnostics.jl")
include("memory.jl")

function __init__()
    lib = Libdl.dlopen(L.libhvdc, Libdl.RTLD_LAZY | Libdl.RTLD_GLOBAL; throw_error = false)
    if lib === nothing
        error("HVDC: cannot load the hvdc library \"$(L.libhvdc)\". Set HVDC_LIBRARY to the " *
              "path of libhvdc.so.0 (or put its directory on LD_LIBRARY_PATH), then restart " *
              "Julia; HVDC_LIBRARY is read when HVDC is precompiled.")
    end
    found = L.hvd_abi_version()
    if found != L.HVDC_ABI_VERSION
        error("HVDC: $(L.libhvdc) has ABI version $found but this package was written for " *
              "ABI version $(L.HVDC_ABI_VERSION); install a matching libhvdc or HVDC.jl")
    end
    return nothing
end

end # module HVDC
