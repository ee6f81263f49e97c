# Every collective of HVDC.jl, sync and async, with values checked on every rank; then process
# sets, errors and diagnostics. Runs on each rank of `mpiexec -n N` (runtests.jl starts it).
using Test
using HVDC
const L = HVDC.LibHVDC

const survivor = HVDC.shared_array(Int32, 16)  # shared memory needs no engine
HVDC.init(cache_capacity = 64, log_level = 3)
const n = HVDC.nranks()
const r = HVDC.rank()

@testset "HVDC.jl rank $r of $n" begin
    @testset "topology and library" begin
        @test HVDC.is_initialized()
        @test 0 <= r < n
        @test 0 <= HVDC.local_rank() < HVDC.local_size()
        @test 0 <= HVDC.cross_rank() < HVDC.cross_size()
        @test startswith(HVDC.version_string(), "0.1.0")
        @test L.hvd_abi_version() == L.HVDC_ABI_VERSION
        @test HVDC.has_feature(:ucx) == (L.hvd_has_feature(L.HVD_FEATURE_UCX) == 1)
        @test_throws ArgumentError HVDC.has_feature(:tpu)
    end

    @testset "allreduce" begin
        grad = fill(Float32(r), 1000)
        @test HVDC.allreduce!(grad; op = Sum, name = "jl.sum") === grad
        @test all(grad .== n * (n - 1) / 2)
        x = Int32[r, -r, 7]
        @test HVDC.allreduce(x; op = Min, name = "jl.min") == Int32[0, -(n - 1), 7]
        @test HVDC.allreduce(x; op = Max, name = "jl.max") == Int32[n - 1, 0, 7]
        @test x == Int32[r, -r, 7]  # out of place leaves the input alone
        dst = zeros(Int64, 2, 2)
        HVDC.allreduce!(dst, Int64[2 r+1; 1 1]; op = Product, name = "jl.product")
        @test dst == Int64[2^n factorial(n); 1 1]
        scaled = ones(Float64, 3)
        HVDC.allreduce!(scaled; op = Sum, name = "jl.scaled", prescale_factor = 2,
                        postscale_factor = 0.25)
        @test scaled == fill(0.5n, 3)
        @test HVDC.allreduce(fill(Float64(r), 5)) == fill((n - 1) / 2, 5)  # Average, auto name
        @test HVDC.allreduce(ones(Float16, 4); op = Sum, name = "jl.half") == fill(Float16(n), 4)
        @test HVDC.allreduce([false, r == 0]; op = Sum, name = "jl.or") == [false, true]
        view_of = view(fill(1.0f0, 4, 3), :, 2)  # a contiguous column view
        @test HVDC.allreduce(view_of; op = Sum, name = "jl.view") == fill(Float32(n), 4)
    end

    @testset "async and handles" begin
        a = ones(Float32, 64)
        b = fill(2.0f0, 64)
        ha = HVDC.allreduce_async!(a; op = Sum, name = "jl.async.a")
        hb = HVDC.allreduce_async!(b; op = Sum, name = "jl.async.b")
        while !poll(ha)
            yield()
        end
        @test poll(ha)  # stays done
        @test wait(ha) === a
        @test wait(hb) == fill(2.0f0 * n, 64)
        @test a == fill(Float32(n), 64)
        bufs = [ones(Int32, 10) for _ in 1:3]
        handles = [HVDC.allreduce_async!(bufs[i]; op = Sum, name = "jl.waitall.$i") for i in 1:3]
        @test HVDC.wait_all(handles) == bufs
        @test all(buf -> buf == fill(Int32(n), 10), bufs)
        HVDC.free!(ha)
        @test_throws ArgumentError wait(ha)  # freed
        HVDC.free!(ha)  # freeing twice is a no-op
    end

    @testset "grouped allreduce" begin
        grads = [ones(Float32, 3), fill(Float32(r), 1000), fill(4.0f0, 1)]
        @test HVDC.grouped_allreduce!(grads; op = Sum, name = "jl.grouped") === grads
        @test grads[1] == fill(Float32(n), 3)
        @test grads[2] == fill(Float32(n * (n - 1) / 2), 1000)
        @test grads[3] == [4.0f0 * n]
        mixed = [Int64[1 2; 3 4], Int32[r, r]]
        wait(HVDC.grouped_allreduce_async!(mixed; op = Max))
        @test mixed[1] == Int64[1 2; 3 4] && mixed[2] == Int32[n - 1, n - 1]
    end

    @testset "allgather" begin
        mine = fill(Int32(r), r + 1)  # rank i contributes i + 1 copies of i
        want = reduce(vcat, [fill(Int32(i), i + 1) for i in 0:n-1])
        @test HVDC.allgather(mine; name = "jl.gather") == want
        # Column-major: a 3 x 2 matrix per rank gathers along the last dimension to 3 x 2n.
        m = Float64[r 10r; 1 11; 2 12]
        g = wait(HVDC.allgather_async(m; name = "jl.gather.matrix"))
        @test size(g) == (3, 2n)
        @test g[:, 2n-1:2n] == Float64[n-1 10(n-1); 1 11; 2 12]
    end

    @testset "broadcast" begin
        root = n - 1
        params = Int64[10r, 10r + 1]
        @test HVDC.broadcast!(params, root; name = "jl.bcast") == Int64[10root, 10root + 1]
        dst = fill(-1.0f0, 3)
        wait(HVDC.broadcast_async!(dst, Float32[r, 5, 6], 0; name = "jl.bcast.copy"))
        @test dst == Float32[0, 5, 6]
        grid = UInt8[r 1; 2 3]
        wait(HVDC.broadcast_async!(grid, root; name = "jl.bcast.grid"))
        @test grid == UInt8[root 1; 2 3]
        err = try
            HVDC.broadcast!(params, n; name = "jl.bcast.bad")
            nothing
        catch e
            e
        end
        @test err isa HVDCError && err.code == L.HVD_ERR_INVALID_ARGUMENT
        @test occursin("root_rank", sprint(showerror, err))
    end

    @testset "alltoall" begin
        even = reduce(vcat, [fill(Int32(100r + dst), 2) for dst in 0:n-1])
        data, splits = HVDC.alltoall(even; name = "jl.a2a")
        @test data == reduce(vcat, [fill(Int32(100src + r), 2) for src in 0:n-1])
        @test splits == fill(2, n)
        uneven = reduce(vcat, [fill(Int32(100r + dst), dst + 1) for dst in 0:n-1])
        data, splits = wait(HVDC.alltoall_async(uneven; splits = 1:n, name = "jl.a2a.uneven"))
        @test splits == fill(r + 1, n)
        @test data == reduce(vcat, [fill(Int32(100src + r), r + 1) for src in 0:n-1])
        @test_throws ArgumentError HVDC.alltoall(uneven; splits = zeros(Int, n + 1))
    end

    @testset "reducescatter" begin
        v = Float32.(0:2n)  # 2n + 1 elements: rank 0 gets three, the others two
        mine = HVDC.reducescatter(v; op = Sum, name = "jl.rs")
        first_index = r == 0 ? 0 : 2r + 1
        @test length(mine) == (r == 0 ? 3 : 2)
        @test mine == Float32.(first_index:first_index+length(mine)-1) .* n
        m = Int32[1 3 5 7; 2 4 6 8]  # 2 x 4: four slices along the last dimension
        part = wait(HVDC.reducescatter_async(m; op = Average, name = "jl.rs.avg"))
        rows = HVDC.reducescatter_rows(4)
        start = div(4, n) * r + min(r, rem(4, n))
        @test size(part) == (2, rows)
        @test part == m[:, start+1:start+rows]
    end

    @testset "device options" begin
        # The keywords reach the C struct; host arrays then ignore them, as the C layer does.
        plain = HVDC.op_args(HVDC.GLOBAL, 1.0, 1.0)[]
        @test plain.cuda_stream == C_NULL && plain.flags == 0
        set = HVDC.op_args(HVDC.GLOBAL, 2.0, 1.0; cuda_stream = 0x7f00, stream_ordered = true,
                           host_path = true)[]
        @test set.cuda_stream == Ptr{Cvoid}(UInt(0x7f00))
        @test set.flags == L.HVD_OP_STREAM_ORDERED | L.HVD_OP_HOST_PATH
        @test set.prescale_factor == 2.0
        @test HVDC.op_args(HVDC.GLOBAL, 1.0, 1.0; host_path = true)[].flags == L.HVD_OP_HOST_PATH
        @test HVDC.op_args(HVDC.GLOBAL, 1.0, 1.0; cuda_stream = Ptr{Cvoid}(16))[].cuda_stream ==
              Ptr{Cvoid}(16)
        @test_throws ArgumentError HVDC.op_args(HVDC.GLOBAL, 1.0, 1.0; cuda_stream = -1)
        @test_throws ArgumentError HVDC.op_args(HVDC.GLOBAL, 1.0, 1.0; cuda_stream = "0x10")
        @test_throws ArgumentError HVDC.op_args(HVDC.GLOBAL, 1.0, 1.0; cuda_stream = true)
        x = fill(Float32(r + 1), 5)
        @test HVDC.allreduce!(x; op = Sum, name = "jl.host_path", host_path = true) === x
        @test x == fill(Float32(n * (n + 1) / 2), 5)
        y = fill(Float64(r), 3)
        h = HVDC.allreduce_async!(y; op = Sum, name = "jl.stream_ordered", cuda_stream = 0,
                                  stream_ordered = true, host_path = true)
        @test wait(h) == fill(Float64(n * (n - 1) / 2), 3)
        @test HVDC.allgather(Int32[r]; name = "jl.host_path.gather", host_path = true) ==
              Int32.(0:n-1)
    end

    @testset "process sets" begin
        @test HVDC.nranks(HVDC.GLOBAL) == n && HVDC.rank(HVDC.GLOBAL) == r
        if n >= 2
            first_set = add_process_set([0])
            rest = add_process_set(reverse(1:n-1))
            @test process_sets() == [HVDC.GLOBAL, first_set, rest]
            @test HVDC.included(first_set) == (r == 0)
            @test HVDC.rank(rest) == r - 1
            @test HVDC.ranks(rest) == collect(1:n-1)
            set = r == 0 ? first_set : rest
            members = HVDC.ranks(set)
            @test HVDC.allreduce(Int32[r]; op = Sum, name = "jl.set.sum", process_set = set) ==
                  Int32[sum(members)]
            @test HVDC.allgather(Int32[r]; name = "jl.set.gather", process_set = set) == members
            @test HVDC.broadcast!(Int32[r], 0; name = "jl.set.bcast", process_set = set) ==
                  Int32[members[1]]
            remove_process_set(rest)
            remove_process_set(first_set)
            @test process_sets() == [HVDC.GLOBAL]
            @test_throws HVDCError HVDC.nranks(rest)
        else
            @test_throws HVDCError add_process_set([0])  # that is set 0 itself
        end
    end

    @testset "shared memory" begin
        A = HVDC.shared_array(Float32, 8, 3)
        @test A isa Matrix{Float32} && Base.size(A) == (8, 3) && all(iszero, A)
        base, bytes = HVDC.mem_size(A)
        @test base == Ptr{Cvoid}(pointer(A)) && bytes == 96
        @test HVDC.mem_size(view(A, :, 3)) == (base, 96)  # an interior view
        @test HVDC.mem_size(pointer(A, 24)) == (base, 96)
        A .= r + 1
        @test HVDC.allreduce!(A; op = Sum, name = "jl.shm.sum") === A
        @test all(A .== n * (n + 1) / 2)
        src = HVDC.shared_array(Float64, 300)
        src .= r
        dst = HVDC.shared_array(Float64, 300)
        HVDC.allreduce!(dst, src; op = Average, name = "jl.shm.avg")
        @test all(dst .== (n - 1) / 2) && all(src .== r)
        b = HVDC.shared_array(Int64, 4)
        b .= 10r .+ (0:3)
        HVDC.broadcast!(b, n - 1; name = "jl.shm.bcast")
        @test b == 10(n - 1) .+ (0:3)
        rows = HVDC.shared_array(Int32, 2, r + 1)
        rows .= r
        @test HVDC.allgather(rows; name = "jl.shm.gather") ==
              reduce(hcat, [fill(Int32(i), 2, i + 1) for i in 0:n-1])
        survivor .= Int32.(r .+ (0:15))
        HVDC.allreduce!(survivor; op = Sum, name = "jl.shm.survivor")
        @test survivor == Int32.(n .* (0:15) .+ n * (n - 1) ÷ 2)

        @test_throws HVDCError HVDC.shared_array(Float32, 0, 4)  # no bytes
        e = try
            HVDC.shared_array(Float32, 0)
        catch err
            err
        end
        @test e isa HVDCError && e.code == L.HVD_ERR_INVALID_ARGUMENT &&
              occursin("bytes is 0", e.message)
        @test_throws ArgumentError HVDC.shared_array(ComplexF64, 2)
        @test_throws ArgumentError HVDC.shared_array(Float32, 2, -1)
        private = zeros(4)
        e = try
            HVDC.mem_size(private)
        catch err
            err
        end
        @test e isa HVDCError && occursin("in no buffer of hvd_mem_alloc", e.message)
        # Nothing in HVDC frees a raw pointer; the library refuses foreign and interior ones.
        @test GC.@preserve private L.hvd_mem_free(pointer(private)) == L.HVD_ERR_INVALID_ARGUMENT
        @test GC.@preserve A L.hvd_mem_free(pointer(A, 2)) == L.HVD_ERR_INVALID_ARGUMENT
        temporary = HVDC.shared_array(UInt8, 64)
        gone = pointer(temporary)
        finalize(HVDC.memory_owner(temporary))  # what the GC runs once it is unreachable
        @test_throws HVDCError HVDC.mem_size(gone)
    end

    @testset "errors" begin
        e = try
            HVDC.init()
            nothing
        catch err
            err
        end
        @test e isa HVDCError && e.code == L.HVD_ERR_INVALID_USAGE
        @test_throws ArgumentError HVDC.allreduce!(ones(ComplexF64, 2))
        @test_throws ArgumentError HVDC.allreduce!(view(ones(4, 4), 1, :))  # strided
        @test_throws ArgumentError HVDC.allreduce!(ones(2); name = "nul\0inside")
        @test_throws DimensionMismatch HVDC.allreduce!(ones(2), ones(3))
        @test_throws HVDCError HVDC.allreduce!([true]; op = Average, name = "jl.bool.avg")
        if n >= 2  # float32 on rank 0, int32 elsewhere: fails on every rank, naming the tensor
            bad = r == 0 ? ones(Float32, 4) : ones(Int32, 4)
            err = try
                HVDC.allreduce!(bad; op = Sum, name = "jl.mismatch")
                nothing
            catch caught
                caught
            end
            @test err isa HVDCError && err.code == L.HVD_ERR_MISMATCH
            @test occursin("jl.mismatch", err.message)
            @test HVDC.allreduce(ones(Float32, 2); op = Sum, name = "jl.after") == fill(Float32(n), 2)
        end
    end

    @testset "diagnostics" begin
        s = HVDC.stats()
        @test s.collectives > 0 && s.tensors >= s.collectives
        @test occursin("collectives ", HVDC.stats_text())
        @test HVDC.async_error() === nothing
        @test HVDC.dump_pending() isa String
        path = joinpath(get(ENV, "HVDC_JULIA_TEST_DIR", tempdir()), "hvdc-julia-timeline.json")
        HVDC.timeline_start(path)
        HVDC.allreduce!(ones(Float32, 16); op = Sum, name = "jl.timeline")
        HVDC.timeline_stop()
        r == 0 && @test filesize(path) > 0
    end

    @testset "barrier and join" begin
        HVDC.barrier(name = "jl.barrier")
        wait(HVDC.barrier_async())
        if r != 0  # rank 0 joins at once and adds zeros to the others' allreduce
            @test HVDC.allreduce(fill(Int32(5), 4); op = Sum, name = "jl.join.sum") ==
                  fill(Int32(5 * (n - 1)), 4)
        end
        last_rank = HVDC.join()
        @test 0 <= last_rank < n && (n == 1 || last_rank != 0)
    end

    @testset "abort" begin
        # A rank reaching this barrier has finished its earlier ops. Rank 0 aborts as soon as its
        # own barrier completes, so elsewhere the barrier itself may already fail with the abort.
        try
            HVDC.barrier(name = "jl.before_abort")
        catch e
            (r != 0 && e isa HVDCError && e.code == L.HVD_ERR_ABORTED) || rethrow()
        end
        r == 0 && HVDC.abort("the Julia test aborts on purpose")
        err = try
            HVDC.barrier(name = "jl.after_abort")
            nothing
        catch caught
            caught
        end
        @test err isa HVDCError && err.code == L.HVD_ERR_ABORTED
    end
end

HVDC.shutdown()

@testset "shared memory after shutdown, rank $r" begin
    @test !HVDC.is_initialized()
    @test survivor == Int32.(n .* (0:15) .+ n * (n - 1) ÷ 2)
    survivor[16] = -5
    @test survivor[16] == -5
    @test HVDC.mem_size(survivor)[2] == 64
end
