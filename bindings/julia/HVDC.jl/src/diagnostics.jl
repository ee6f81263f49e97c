# Faults, hang reports, the timeline and statistics.

"Fails every pending and later op on every rank with HVD_ERR_ABORTED until `HVDC.shutdown`."
abort(reason::AbstractString) = check(L.hvd_abort(String(reason)), "hvd_abort")

"The first asynchronous error the engine met as an `HVDCError`, or `nothing`."
function async_error()
    status = Ref{Int32}(L.HVD_SUCCESS)
    check(L.hvd_get_async_error(status), "hvd_get_async_error")
    return status[] == L.HVD_SUCCESS ? nothing : error_from(status[], "hvd_get_async_error")
end

# Calls a (buffer, size, length) text function with a buffer that grows until the text fits
# (the text may grow between calls: each hvd_dump_pending call makes a new report).
function read_text(f, call::AbstractString)
    buffer = Vector{UInt8}(undef, 4096)
    while true
        len = Ref{Csize_t}(0)
        status = f(buffer, length(buffer), len)
        status == L.HVD_SUCCESS && return String(buffer[1:len[]])
        if status != L.HVD_ERR_INVALID_ARGUMENT || len[] < length(buffer)
            throw(error_from(status, call))
        end
        resize!(buffer, len[] + 1024)
    end
end

"Logs a report of every op in flight on this rank (warning level) and returns it."
dump_pending() = read_text(L.hvd_dump_pending, "hvd_dump_pending")

"Rank 0 records a Chrome trace of every tensor into `path` until `timeline_stop`."
timeline_start(path::AbstractString) =
    check(L.hvd_timeline_start(String(path)), "hvd_timeline_start")
timeline_stop() = check(L.hvd_timeline_stop(), "hvd_timeline_stop")

"This rank's engine counters since init, as a NamedTuple (`collectives`, `cache_hits`, ...)."
function stats()
    fields = fieldnames(L.hvd_stats_t)
    zero_stats = L.hvd_stats_t(UInt32(sizeof(L.hvd_stats_t)), zeros(UInt64, length(fields) - 1)...)
    s = Ref(zero_stats)
    check(L.hvd_stats_get(s), "hvd_stats_get")
    counters = fields[3:end]  # after struct_size and reserved
    return NamedTuple{counters}(Tuple(Int(getfield(s[], f)) for f in counters))
end

"The counters as \"name value\" lines."
stats_text() = read_text(L.hvd_stats_format, "hvd_stats_format")
