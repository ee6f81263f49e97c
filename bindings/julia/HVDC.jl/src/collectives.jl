# The collectives. Each `*_async` call enqueues the op and returns a Handle holding its arrays;
# the plain form waits for it. Keywords: `name` (a string, or nothing for an automatic name),
# `process_set` (a ProcessSet, HVDC.GLOBAL by default) and, for reductions, `op` (Average by
# default), `prescale_factor` and `postscale_factor`. Every op with an array also takes the
# device keywords of `hvd_op_args_t`, which apply to CUDA arrays and are ignored for host arrays:
# `cuda_stream` (the cudaStream_t the op is ordered after: nothing for the legacy default stream,
# a Ptr such as CUDA.jl's `stream().handle`, or an integer address), `stream_ordered` (later work
# on that stream sees the result without a host wait) and `host_path` (stage through pinned host
# memory and reduce on the host; every rank must make the same choice).

# Enqueues through `submit(input_ref, name_ptr, args_ref, handle_ref)` with src described and
# every array and string the call reads preserved, and wraps the id in a Handle.
function enqueue(submit, call::AbstractString, src::AbstractArray, keep::Vector{Any},
                 set::ProcessSet, result::Function, name, args)
    text = checked_name(name)
    shape = c_shape(src)
    id = Ref{UInt64}(0)
    GC.@preserve src keep shape text begin
        input = Ref(tensor_of(src, shape))
        check(submit(input, name_pointer(text), args, id), call)
    end
    return Handle(id[], keep, set, result)
end

"""
    allreduce_async!(A; op = Average, name, process_set, prescale_factor, postscale_factor)
    allreduce_async!(dst, src; ...)

Reduces `A` in place (or `src` into `dst`, of the same size) over the ranks; `wait` returns the
result array.
"""
function allreduce_async!(dst::AbstractArray{T}, src::AbstractArray{T}; op::ReduceOp = Average,
                          name = nothing, process_set::ProcessSet = GLOBAL,
                          prescale_factor::Real = 1.0, postscale_factor::Real = 1.0,
                          cuda_stream = nothing, stream_ordered::Bool = false,
                          host_path::Bool = false) where {T}
    check_array(src, "src")
    check_array(dst, "dst")
    Base.size(dst) == Base.size(src) ||
        throw(DimensionMismatch("dst has size $(Base.size(dst)), src has size $(Base.size(src))"))
    args = op_args(process_set, prescale_factor, postscale_factor; cuda_stream, stream_ordered,
                   host_path)
    return GC.@preserve dst begin
        out = Ptr{Cvoid}(pointer(dst))
        enqueue("hvd_allreduce_async", src, Any[src, dst], process_set, _ -> dst, name,
                       args) do input, name_ptr, a, id
            L.hvd_allreduce_async(input, out, op.code, name_ptr, a, id)
        end
    end
end
allreduce_async!(A::AbstractArray; kwargs...) = allreduce_async!(A, A; kwargs...)

"In place (or into `dst`); returns the result. See `allreduce_async!`."
allreduce!(A::AbstractArray; kwargs...) = wait(allreduce_async!(A; kwargs...))
allreduce!(dst::AbstractArray, src::AbstractArray; kwargs...) =
    wait(allreduce_async!(dst, src; kwargs...))
"A new array holding the reduction of `A`. See `allreduce_async!`."
allreduce(A::AbstractArray; kwargs...) = allreduce!(similar(A, eltype(A), Base.size(A)), A; kwargs...)

"""
    grouped_allreduce_async!(arrays; op = Average, name, process_set, prescale_factor, postscale_factor)

Reduces every array in place, enqueued together behind one handle. With `name`, member `i`
(1-based) is named "<name>.<i-1>", as in the C++ binding.
"""
function grouped_allreduce_async!(arrays::AbstractVector{<:AbstractArray}; op::ReduceOp = Average,
                                  name = nothing, process_set::ProcessSet = GLOBAL,
                                  prescale_factor::Real = 1.0, postscale_factor::Real = 1.0,
                                  cuda_stream = nothing, stream_ordered::Bool = false,
                                  host_path::Bool = false)
    for (i, A) in enumerate(arrays)
        check_array(A, "arrays[$i]")
    end
    base = checked_name(name)
    names = base === nothing ? nothing : [string(base, ".", i - 1) for i in 1:length(arrays)]
    shapes = [c_shape(A) for A in arrays]
    args = op_args(process_set, prescale_factor, postscale_factor; cuda_stream, stream_ordered,
                   host_path)
    id = Ref{UInt64}(0)
    GC.@preserve arrays names shapes begin
        inputs = [tensor_of(A, s) for (A, s) in zip(arrays, shapes)]
        outputs = Ptr{Cvoid}[Ptr{Cvoid}(pointer(A)) for A in arrays]
        name_ptrs = names === nothing ? Ptr{Ptr{UInt8}}(C_NULL) :
                    Ptr{UInt8}[pointer(n) for n in names]
        check(L.hvd_grouped_allreduce_async(inputs, outputs, length(inputs), op.code, name_ptrs,
                                            args, id),
              "hvd_grouped_allreduce_async")
    end
    return Handle(id[], Any[arrays...], process_set, _ -> arrays)
end
grouped_allreduce!(arrays::AbstractVector{<:AbstractArray}; kwargs...) =
    wait(grouped_allreduce_async!(arrays; kwargs...))

"""
    allgather_async(A; name, process_set)

Concatenates every rank's `A` along the last dimension, in rank order (that dimension may
differ per rank; the others must match). `wait` returns a new array.
"""
function allgather_async(A::AbstractArray{T}; name = nothing,
                         process_set::ProcessSet = GLOBAL, cuda_stream = nothing,
                         stream_ordered::Bool = false, host_path::Bool = false) where {T}
    check_array(A, "A")
    ndims(A) >= 1 || throw(ArgumentError("A must have at least one dimension to gather along"))
    args = op_args(process_set, 1.0, 1.0; cuda_stream, stream_ordered, host_path)
    return enqueue(L.hvd_allgather_async, "hvd_allgather_async", A, Any[A], process_set,
                   h -> output_array(h, T), name, args)
end
allgather(A::AbstractArray; kwargs...) = wait(allgather_async(A; kwargs...))

"""
    broadcast_async!(A, root; name, process_set)
    broadcast_async!(dst, src, root; ...)

Copies rank `root`'s array (a rank of `process_set`) into `A` (or `dst`) on every rank; `wait`
returns it.
"""
function broadcast_async!(dst::AbstractArray{T}, src::AbstractArray{T}, root::Integer;
                          name = nothing, process_set::ProcessSet = GLOBAL,
                          cuda_stream = nothing, stream_ordered::Bool = false,
                          host_path::Bool = false) where {T}
    check_array(src, "src")
    check_array(dst, "dst")
    Base.size(dst) == Base.size(src) ||
        throw(DimensionMismatch("dst has size $(Base.size(dst)), src has size $(Base.size(src))"))
    args = op_args(process_set, 1.0, 1.0; cuda_stream, stream_ordered, host_path)
    return GC.@preserve dst begin
        out = Ptr{Cvoid}(pointer(dst))
        enqueue("hvd_broadcast_async", src, Any[src, dst], process_set, _ -> dst, name,
                       args) do input, name_ptr, a, id
            L.hvd_broadcast_async(input, out, Int32(root), name_ptr, a, id)
        end
    end
end
broadcast_async!(A::AbstractArray, root::Integer; kwargs...) =
    broadcast_async!(A, A, root; kwargs...)
"In place; returns `A`. See `broadcast_async!`."
broadcast!(A::AbstractArray, root::Integer; kwargs...) =
    wait(broadcast_async!(A, root; kwargs...))

"""
    alltoall_async(A; splits = nothing, name, process_set)

Sends `splits[i]` slices of `A` along its last dimension to rank `i - 1` of the set (nothing:
an even split) and receives every rank's slices for this rank. `wait` returns
`(received, received_splits)`.
"""
function alltoall_async(A::AbstractArray{T}; splits = nothing, name = nothing,
                        process_set::ProcessSet = GLOBAL, cuda_stream = nothing,
                        stream_ordered::Bool = false, host_path::Bool = false) where {T}
    check_array(A, "A")
    ndims(A) >= 1 || throw(ArgumentError("A must have at least one dimension to split"))
    csplits = splits === nothing ? nothing : Int32.(collect(splits))
    if csplits !== nothing && length(csplits) != nranks(process_set)
        throw(ArgumentError("splits has $(length(csplits)) entries but process set " *
                            "$(process_set.id) has $(nranks(process_set)) ranks"))
    end
    args = op_args(process_set, 1.0, 1.0; cuda_stream, stream_ordered, host_path)
    return GC.@preserve csplits begin
        split_ptr = csplits === nothing ? Ptr{Int32}(C_NULL) : pointer(csplits)
        enqueue("hvd_alltoall_async", A, Any[A], process_set,
                       h -> (output_array(h, T), received_splits(h)), name,
                       args) do input, name_ptr, a, id
            L.hvd_alltoall_async(input, split_ptr, name_ptr, a, id)
        end
    end
end
alltoall(A::AbstractArray; kwargs...) = wait(alltoall_async(A; kwargs...))

"Slices along the last dimension that a reducescatter of `rows` leaves on this rank of `set`."
function reducescatter_rows(rows::Integer, set::ProcessSet = GLOBAL)
    n, me = nranks(set), rank(set)
    return div(rows, n) + (me < rem(rows, n) ? 1 : 0)
end

"""
    reducescatter_async(A; op = Average, name, process_set, prescale_factor, postscale_factor)

Reduces `A` (same size everywhere; `Sum` or `Average`) and leaves this rank's slices along the
last dimension: the first `size(A)[end] % nranks` ranks get one more. `wait` returns them.
"""
function reducescatter_async(A::AbstractArray{T}; op::ReduceOp = Average, name = nothing,
                             process_set::ProcessSet = GLOBAL, prescale_factor::Real = 1.0,
                             postscale_factor::Real = 1.0, cuda_stream = nothing,
                             stream_ordered::Bool = false, host_path::Bool = false) where {T}
    check_array(A, "A")
    ndims(A) >= 1 || throw(ArgumentError("A must have at least one dimension to scatter"))
    dims = Base.size(A)
    out = Array{T}(undef, (dims[1:end-1]..., reducescatter_rows(dims[end], process_set)))
    args = op_args(process_set, prescale_factor, postscale_factor; cuda_stream, stream_ordered,
                   host_path)
    return GC.@preserve out begin
        out_ptr = Ptr{Cvoid}(pointer(out))
        enqueue("hvd_reducescatter_async", A, Any[A, out], process_set, _ -> out, name,
                       args) do input, name_ptr, a, id
            L.hvd_reducescatter_async(input, out_ptr, op.code, name_ptr, a, id)
        end
    end
end
reducescatter(A::AbstractArray; kwargs...) = wait(reducescatter_async(A; kwargs...))

"Completes once every rank of `process_set` has called it."
function barrier_async(; name = nothing, process_set::ProcessSet = GLOBAL)
    text = checked_name(name)
    args = op_args(process_set, 1.0, 1.0)
    id = Ref{UInt64}(0)
    GC.@preserve text begin
        check(L.hvd_barrier_async(name_pointer(text), args, id), "hvd_barrier_async")
    end
    return Handle(id[], Any[], process_set, _ -> nothing)
end
barrier(; kwargs...) = wait(barrier_async(; kwargs...))

"""
    HVDC.join() -> Int

For a rank out of data: blocks until every rank has called it (meanwhile this rank adds zeros
to the others' allreduces) and returns the last rank to join. This call blocks the Julia
thread, not only the task.
"""
function join()
    last = Ref{Int32}(-1)
    check(L.hvd_join(last), "hvd_join")
    return Int(last[])
end
