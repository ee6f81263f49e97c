# Julia arrays as the C library's tensor descriptors, names and per-op arguments.

# Row-major shape of a column-major array: C's first dimension is Julia's last.
c_shape(A::AbstractArray) = Int64[reverse(Base.size(A))...]

function is_contiguous(A::AbstractArray)
    expected = 1
    for (n, s) in zip(Base.size(A), strides(A))
        n == 1 || s == expected || return false
        expected *= n
    end
    return true
end

# Only host arrays whose elements lie one after another can be passed by pointer.
function check_array(A, argname::AbstractString)
    A isa AbstractArray ||
        throw(ArgumentError("$argname must be an array, got $(typeof(A))"))
    hvd_dtype(eltype(A))
    A isa Array && return nothing
    applicable(strides, A) && applicable(pointer, A) && is_contiguous(A) ||
        throw(ArgumentError("$argname ($(typeof(A))) is not a contiguous host array; pass copy($argname)"))
    return nothing
end

# The descriptor of A; call it inside `GC.@preserve A shape`, which must cover the C call too.
tensor_of(A::AbstractArray, shape::Vector{Int64}) =
    L.hvd_tensor_t(Ptr{Cvoid}(pointer(A)), hvd_dtype(eltype(A)), Int32(length(shape)),
                   pointer(shape), L.hvd_device_t(L.HVD_DEVICE_CPU, 0))

# A name as the NUL-terminated String the library reads, or nothing for an automatic name.
function checked_name(name)
    name === nothing && return nothing
    name isa AbstractString ||
        throw(ArgumentError("name must be a string or nothing, got $(typeof(name))"))
    text = String(name)
    occursin('\0', text) && throw(ArgumentError("name $(repr(text)) contains a NUL character"))
    return text
end

# Julia Strings end in a hidden NUL, so pointer(text) is a C string; preserve `text` around use.
name_pointer(text::Nothing) = Ptr{UInt8}(C_NULL)
name_pointer(text::String) = pointer(text)

# hvd_op_args_t with the library's defaults and the given fields. No callbacks: they would run
# on the engine thread, where Julia code must not run. cuda_stream, stream_ordered and host_path
# apply to CUDA arrays (the C layer ignores them for host arrays).
function op_args(set::ProcessSet, prescale_factor::Real, postscale_factor::Real;
                 cuda_stream = nothing, stream_ordered::Bool = false, host_path::Bool = false)
    defaults = Ref{L.hvd_op_args_t}()
    check(L.hvd_op_args_init(defaults, sizeof(L.hvd_op_args_t)), "hvd_op_args_init")
    d = defaults[]
    flags = (stream_ordered ? L.HVD_OP_STREAM_ORDERED : UInt32(0)) |
            (host_path ? L.HVD_OP_HOST_PATH : UInt32(0))
    return Ref(L.hvd_op_args_t(d.struct_size, set.id, Float64(prescale_factor),
                               Float64(postscale_factor), C_NULL, C_NULL, C_NULL, C_NULL,
                               stream_pointer(cuda_stream), flags))
end

# A cudaStream_t from nothing (the legacy default stream), a pointer (e.g. CUDA.jl's
# `stream().handle`) or an integer address.
stream_pointer(::Nothing) = C_NULL
stream_pointer(stream::Ptr) = Ptr{Cvoid}(stream)
function stream_pointer(stream::Integer)
    stream >= 0 || throw(ArgumentError("cuda_stream: address $stream is negative"))
    return Ptr{Cvoid}(UInt(stream))
end
stream_pointer(stream) = throw(ArgumentError("cuda_stream: expected nothing, a Ptr or an " *
                                             "integer address, got a $(typeof(stream))"))
stream_pointer(::Bool) = throw(ArgumentError("cuda_stream: expected nothing, a Ptr or an " *
                                             "integer address, got a Bool"))
