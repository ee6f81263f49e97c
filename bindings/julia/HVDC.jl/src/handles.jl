# Handles of async ops: they hold the op's arrays, poll for completion, and free themselves.

"""
    Handle

An op in flight. It holds the op's arrays (so the GC cannot free them while the library uses
them) until it is freed. `wait(h)` polls until the op ends and returns its result (the output
array, or a tuple for alltoall); `poll(h)` tells whether it has ended. A finalizer frees the
handle; `HVDC.free!(h)` does it at once (both wait for a running op).
"""
mutable struct Handle
    id::UInt64
    arrays::Vector{Any}
    process_set::ProcessSet
    result::Function  # Handle -> the value wait returns, called once the op succeeded
    function Handle(id::UInt64, arrays::Vector{Any}, set::ProcessSet, result::Function)
        h = new(id, arrays, set, result)
        finalizer(h -> release!(h, false), h)
        return h
    end
end

# hvd_handle_free waits for a running op, so the arrays are released only after the library is
# done with them. In a finalizer the status is dropped (a finalizer must not throw).
function release!(h::Handle, report::Bool)
    id = h.id
    id == 0 && return nothing
    h.id = 0
    status = L.hvd_handle_free(id)
    empty!(h.arrays)
    report && check(status, "hvd_handle_free")
    return nothing
end

"Frees the handle now (waiting for a running op) and releases its arrays."
free!(h::Handle) = release!(h, true)

function live_id(h::Handle)
    h.id == 0 && throw(ArgumentError("the handle was already freed"))
    return h.id
end

"""
    poll(h::Handle) -> Bool

Whether the op has ended, without blocking; throws its `HVDCError` if it failed.
"""
function poll(h::Handle)
    done = Ref{Int32}(0)
    check(L.hvd_test(live_id(h), done), "hvd_test")
    return done[] != 0
end

"""
    wait(h::Handle)

Polls until the op ends (yielding to other tasks, then sleeping 1 ms between polls), throws its
`HVDCError` if it failed, and returns its result.
"""
function Base.wait(h::Handle)
    polls = 0
    while !poll(h)
        polls += 1
        polls < 1000 ? yield() : sleep(0.001)
    end
    return h.result(h)
end

"Waits for every handle, in order; returns their results."
wait_all(handles::AbstractVector{Handle}) = [wait(h) for h in handles]

# A copy of a finished allgather's or alltoall's library-owned output, in Julia's dimension
# order (the buffer belongs to the handle and goes when it is freed).
function output_array(h::Handle, ::Type{T}) where {T}
    out = Ref{L.hvd_tensor_t}()
    check(L.hvd_handle_output(live_id(h), out), "hvd_handle_output")
    t = out[]
    t.dtype == hvd_dtype(T) || throw(HVDCError(L.HVD_ERR_INTERNAL,
        "hvd_handle_output: dtype $(t.dtype), expected $(hvd_dtype(T)) for $T"))
    c_dims = unsafe_wrap(Array, t.shape, Int(t.ndim))
    A = Array{T}(undef, Tuple(reverse(Int.(c_dims))))
    isempty(A) || unsafe_copyto!(pointer(A), Ptr{T}(t.data), length(A))
    return A
end

"Rows (along the last dimension) received from each rank of the set by a finished alltoall."
function received_splits(h::Handle)
    splits = Vector{Int32}(undef, nranks(h.process_set))
    check(L.hvd_handle_received_splits(live_id(h), splits, Int32(length(splits))),
          "hvd_handle_received_splits")
    return Int.(splits)
end
