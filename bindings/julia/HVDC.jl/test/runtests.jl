# The HVDC.jl tests: test_collectives.jl on HVDC_JULIA_TEST_NPROCS ranks (default 2). Started by
# `mpiexec` (or any launcher that sets the rank variables) it runs the tests on this rank;
# started alone it launches itself under `mpiexec -n N`, as MPI.jl's tests do.
using Test

const TEST_FILE = joinpath(@__DIR__, "test_collectives.jl")
const LAUNCHED = any(haskey(ENV, v) for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "HVDC_SIZE"))

if LAUNCHED
    include(TEST_FILE)
else
    nprocs = parse(Int, get(ENV, "HVDC_JULIA_TEST_NPROCS", "2"))
    mpiexec = get(ENV, "HVDC_MPIEXEC", something(Sys.which("mpiexec"), "mpiexec"))
    # Open MPI's flags: more ranks than cores, and no pinning of a rank and its engine thread
    # to one core. Set HVDC_MPIEXEC_FLAGS="" for other launchers.
    flags = split(get(ENV, "HVDC_MPIEXEC_FLAGS", "--oversubscribe --bind-to none"))
    project = dirname(@__DIR__)
    cmd = `$mpiexec -n $nprocs $flags $(Base.julia_cmd()) --startup-file=no --project=$project $TEST_FILE`
    @testset "HVDC.jl under mpiexec -n $nprocs" begin
        @test success(pipeline(cmd; stdout = stdout, stderr = stderr))
    end
end
