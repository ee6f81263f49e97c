# init / shutdown, their settings, and the topology queries.

# init keyword => (config key, value kind).
const SETTINGS = Dict{Symbol,Tuple{Int32,Symbol}}(
    :log_level => (L.HVD_CFG_LOG_LEVEL, :int),
    :hostname => (L.HVD_CFG_HOSTNAME, :str),
    :bootstrap => (L.HVD_CFG_BOOTSTRAP, :str),
    :spin_micros => (L.HVD_CFG_SPIN_MICROS, :int),
    :fusion_threshold => (L.HVD_CFG_FUSION_THRESHOLD, :int),
    :cache_capacity => (L.HVD_CFG_CACHE_CAPACITY, :int),
    :deterministic => (L.HVD_CFG_DETERMINISTIC, :int),
    :process_sets => (L.HVD_CFG_PROCESS_SETS, :str),
    :rank => (L.HVD_CFG_RANK, :int),
    :size => (L.HVD_CFG_SIZE, :int),
    :master_addr => (L.HVD_CFG_MASTER_ADDR, :str),
    :master_port => (L.HVD_CFG_MASTER_PORT, :int),
    :secret => (L.HVD_CFG_SECRET, :str),
    :iface => (L.HVD_CFG_IFACE, :str),
)

# process_sets = [[0, 2], [1, 3]] is the header's "0,2;1,3".
setting_text(value::AbstractString) = String(value)
setting_text(value::AbstractVector) =
    Base.join([Base.join(Int.(members), ",") for members in value], ";")

function apply_setting!(config::Ptr{Cvoid}, key::Symbol, value)
    haskey(SETTINGS, key) || throw(ArgumentError(
        "unknown setting $key; known: $(Base.join(sort!(collect(keys(SETTINGS))), ", "))"))
    code, kind = SETTINGS[key]
    # The label is built before the call: nothing may allocate between a failed call and
    # check() reading the thread's message (a finalizer run by that GC could replace it).
    if kind === :int
        value isa Integer ||
            throw(ArgumentError("setting $key must be an integer, got $(repr(value))"))
        label = "hvd_config_set_int($key)"
        check(L.hvd_config_set_int(config, code, Int64(value)), label)
    else
        text = setting_text(value)
        label = "hvd_config_set_str($key)"
        check(L.hvd_config_set_str(config, code, text), label)
    end
    return nothing
end

const SHUTDOWN_AT_EXIT = Ref(false)

"""
    HVDC.init(; settings...)

Starts hvdc on every rank (collective). Settings override the `HVDC_*` environment variables:
`log_level`, `hostname`, `bootstrap`, `spin_micros`, `fusion_threshold`, `cache_capacity`,
`deterministic`, `process_sets` (e.g. `[[0, 2], [1, 3]]`, ids 1, 2, ...), `rank`, `size`,
`master_addr`, `master_port`, `secret`, `iface`. Registers `HVDC.shutdown` to run at exit.
"""
function init(; settings...)
    if isempty(settings)
        check(L.hvd_init(), "hvd_init")
    else
        config = Ref{Ptr{Cvoid}}(C_NULL)
        check(L.hvd_config_create(config), "hvd_config_create")
        try
            for (key, value) in settings
                apply_setting!(config[], key, value)
            end
            check(L.hvd_init_with_config(config[]), "hvd_init_with_config")
        finally
            L.hvd_config_destroy(config[])
        end
    end
    if !SHUTDOWN_AT_EXIT[]
        SHUTDOWN_AT_EXIT[] = true
        atexit(() -> L.hvd_shutdown())
    end
    return nothing
end

"""
    HVDC.shutdown()

Fails every pending op with `HVD_ERR_SHUT_DOWN` and stops the engine; `HVDC.init` may follow.
Handles stay valid (and must still be waited on or freed).
"""
shutdown() = check(L.hvd_shutdown(), "hvd_shutdown")

is_initialized() = L.hvd_is_initialized() != 0

# Each is -1 before init.
rank() = Int(L.hvd_rank())
nranks() = Int(L.hvd_size())
local_rank() = Int(L.hvd_local_rank())
local_size() = Int(L.hvd_local_size())
cross_rank() = Int(L.hvd_cross_rank())
cross_size() = Int(L.hvd_cross_size())

"The library's version and compiled features, e.g. \"0.1.0 +ucx +mpi\"."
version_string() = unsafe_string(L.hvd_version_string())

const FEATURES = Dict(:ucx => L.HVD_FEATURE_UCX, :mpi => L.HVD_FEATURE_MPI,
                      :cuda => L.HVD_FEATURE_CUDA, :nccl => L.HVD_FEATURE_NCCL)

"""
    HVDC.has_feature(f::Symbol)

Whether `:ucx`, `:mpi`, `:cuda` or `:nccl` was compiled into the library.
"""
function has_feature(f::Symbol)
    haskey(FEATURES, f) || throw(ArgumentError("unknown feature $f; known: ucx, mpi, cuda, nccl"))
    return L.hvd_has_feature(FEATURES[f]) != 0
end

"""
    HVDC.device_count()

The CUDA devices usable now. Throws `HVDCError` (`HVD_ERR_UNSUPPORTED`, with CUDA's reason)
where there is no GPU or driver, or the library was built without CUDA.
"""
function device_count()
    count = Ref{Int32}(0)
    check(L.hvd_device_count(count), "hvd_device_count")
    return Int(count[])
end
