# Shared host memory: Julia arrays over buffers of hvd_mem_alloc, which the ranks on this host
# map, so that a collective on them reads and reduces the local peers' data in place.

# The object whose collection frees the buffer: from Julia 1.11 on, arrays share a Memory
# object (reshape and vec make new Arrays over it), so the finalizer goes there; before, a
# reshaped array keeps its parent array alive.
@static if VERSION >= v"1.11"
    memory_owner(A::Array) = getfield(getfield(A, :ref), :mem)
else
    memory_owner(A::Array) = A
end

"""
    HVDC.shared_array(T, dims...) -> Array{T}

A zeroed `Array{T}` of size `dims` in shared host memory: collectives on it read and reduce the
local peers' data in place. It needs no `HVDC.init` and stays valid after `HVDC.shutdown`; a
finalizer frees the memory once the array (and every view or reshape of it) is collected. `T`
is an element type hvdc supports; an array of no elements is an `HVDCError`
(`HVD_ERR_INVALID_ARGUMENT`), as `hvd_mem_alloc` gives for 0 bytes.
"""
function shared_array(::Type{T}, dims::Integer...) where {T}
    hvd_dtype(T)  # throws ArgumentError for a type hvdc cannot reduce
    any(d -> d < 0, dims) &&
        throw(ArgumentError("dims $(Tuple(dims)) has a negative dimension"))
    count = prod(Int, dims; init = 1)
    count <= typemax(Int) ÷ sizeof(T) ||
        throw(ArgumentError("dims $(Tuple(dims)) of $T need more bytes than an Int holds"))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(L.hvd_mem_alloc(Csize_t(count * sizeof(T)), out), "hvd_mem_alloc")
    start = out[]
    A = unsafe_wrap(Array, Ptr{T}(start), map(Int, dims); own = false)
    finalizer(_ -> L.hvd_mem_free(start), memory_owner(A))
    return A
end
shared_array(::Type{T}, dims::Tuple{Vararg{Integer}}) where {T} = shared_array(T, dims...)

"""
    HVDC.mem_size(x) -> (base::Ptr{Cvoid}, bytes::Int)

The start and size of the shared buffer (from `shared_array` or `hvd_mem_alloc`) that holds
`x`: a `Ptr` anywhere inside it, or a contiguous array or view over its memory. An address in
no such buffer is an `HVDCError` (`HVD_ERR_INVALID_ARGUMENT`).
"""
function mem_size(ptr::Ptr)
    base = Ref{Ptr{Cvoid}}(C_NULL)
    bytes = Ref{Csize_t}(0)
    check(L.hvd_mem_size(Ptr{Cvoid}(ptr), base, bytes), "hvd_mem_size")
    return base[], Int(bytes[])
end
function mem_size(A::AbstractArray)
    check_array(A, "A")
    return GC.@preserve A mem_size(pointer(A))
end
