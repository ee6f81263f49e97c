# Status codes become HVDCError; reduce ops and element types map to the header's values.

"""
    HVDCError(code, message)

A failed hvdc call: `code` is the `hvd_status_t` (< 0, e.g. `LibHVDC.HVD_ERR_MISMATCH`) and
`message` reads "<C function>: <status text>: <library detail>".
"""
struct HVDCError <: Exception
    code::Int32
    message::String
end

Base.showerror(io::IO, e::HVDCError) = print(io, "HVDCError(", e.code, "): ", e.message)

status_string(code::Integer) = unsafe_string(L.hvd_status_string(Int32(code)))

# The detail message is the calling thread's and the next hvdc call replaces it: this must run
# right after the failed call, with no yield point in between (a task may move to another
# thread only when it yields).
function error_from(status::Integer, call::AbstractString)
    detail = unsafe_string(L.hvd_last_error_message())
    text = string(call, ": ", status_string(status))
    isempty(detail) || (text = string(text, ": ", detail))
    return HVDCError(Int32(status), text)
end

check(status::Integer, call::AbstractString) =
    status < 0 ? throw(error_from(status, call)) : nothing

"""
    ReduceOp

A reduction: `Average` (the default), `Sum`, `Min`, `Max` or `Product`. Integers wrap on
overflow and average truncates toward zero; for `Bool`, `Sum`/`Max` are OR and `Product`/`Min`
are AND.
"""
struct ReduceOp
    code::Int32
end
const Average = ReduceOp(L.HVD_OP_AVERAGE)
const Sum = ReduceOp(L.HVD_OP_SUM)
const Min = ReduceOp(L.HVD_OP_MIN)
const Max = ReduceOp(L.HVD_OP_MAX)
const Product = ReduceOp(L.HVD_OP_PRODUCT)

const Element = Union{UInt8,Int8,UInt16,Int16,Int32,Int64,Float16,Float32,Float64,Bool}

hvd_dtype(::Type{UInt8}) = L.HVD_UINT8
hvd_dtype(::Type{Int8}) = L.HVD_INT8
hvd_dtype(::Type{UInt16}) = L.HVD_UINT16
hvd_dtype(::Type{Int16}) = L.HVD_INT16
hvd_dtype(::Type{Int32}) = L.HVD_INT32
hvd_dtype(::Type{Int64}) = L.HVD_INT64
hvd_dtype(::Type{Float16}) = L.HVD_FLOAT16
hvd_dtype(::Type{Float32}) = L.HVD_FLOAT32
hvd_dtype(::Type{Float64}) = L.HVD_FLOAT64
hvd_dtype(::Type{Bool}) = L.HVD_BOOL
hvd_dtype(::Type{T}) where {T} =
    throw(ArgumentError("element type $T is not supported by hvdc; use one of $Element"))
