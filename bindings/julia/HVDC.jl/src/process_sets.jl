# Process sets: subsets of the ranks with their own negotiation; set 0 holds every rank.

"""
    ProcessSet(id)

A process set by id; `HVDC.GLOBAL` (id 0) holds every rank. Pass one as `process_set = ...` to
a collective: only its members may call it, and ranks, roots and orders then refer to the set.
"""
struct ProcessSet
    id::Int32
end
const GLOBAL = ProcessSet(0)

function query(f, set::ProcessSet, call::AbstractString)
    value = Ref{Int32}(0)
    check(f(set.id, value), call)
    return Int(value[])
end

"This rank's rank in `set`, or -1 if it is not a member."
rank(set::ProcessSet) = query(L.hvd_process_set_rank, set, "hvd_process_set_rank")
nranks(set::ProcessSet) = query(L.hvd_process_set_size, set, "hvd_process_set_size")
included(set::ProcessSet) = query(L.hvd_process_set_included, set, "hvd_process_set_included") != 0

"The members of `set`, ascending."
function ranks(set::ProcessSet)
    out = Vector{Int32}(undef, nranks(set))
    count = Ref{Int32}(0)
    check(L.hvd_process_set_ranks(set.id, out, Int32(length(out)), count), "hvd_process_set_ranks")
    return Int.(out[1:count[]])
end

"""
    add_process_set(members) -> ProcessSet

Creates a set of the given ranks. Collective over every rank, members or not: each calls it with
the same ranks, in the same order relative to other adds and removes.
"""
function add_process_set(members::AbstractVector{<:Integer})
    cranks = Int32.(collect(members))
    id = Ref{Int32}(0)
    check(L.hvd_process_set_create(cranks, Int32(length(cranks)), id), "hvd_process_set_create")
    return ProcessSet(id[])
end

"Removes a set (collective like `add_process_set`); its pending ops fail."
remove_process_set(set::ProcessSet) =
    check(L.hvd_process_set_destroy(set.id), "hvd_process_set_destroy")

"Every process set, ascending by id (`HVDC.GLOBAL` first)."
function process_sets()
    count = Ref{Int32}(0)
    check(L.hvd_process_set_ids(Ptr{Int32}(C_NULL), Int32(0), count), "hvd_process_set_ids")
    ids = Vector{Int32}(undef, count[])
    check(L.hvd_process_set_ids(ids, Int32(length(ids)), count), "hvd_process_set_ids")
    return [ProcessSet(id) for id in ids[1:min(count[], length(ids))]]
end
