#!/usr/bin/env python3
"""Runs the Rust binding's tests against the library in this build directory.

  cargo_suite.py CARGO LIBHVDC TARGET_DIR test
      `cargo test --offline` (unit, integration and doc tests, one rank)
  cargo_suite.py CARGO LIBHVDC TARGET_DIR run EXAMPLE LAUNCHER [ARGS...]
      builds the examples, then runs `LAUNCHER ARGS... <example binary>` (the multi-rank checks)

CARGO is a cargo executable (the image's rustup cargo or Debian's /usr/bin/cargo); a missing one
skips the test (exit 77) with the reason, or fails it under CI=true. The build script finds the
library through HVDC_LIB_DIR; LD_LIBRARY_PATH lets the test programs load it, because a `links`
crate gives its dependents no rpath.
"""
import os
import shutil
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "..", "..", "bindings", "rust", "Cargo.toml")


def cargo_environment(cargo, libhvdc, target_dir):
    env = dict(os.environ)
    lib_dir = os.path.dirname(os.path.abspath(libhvdc))
    env["HVDC_LIB_DIR"] = lib_dir
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in [lib_dir, env.get("LD_LIBRARY_PATH")] if p)
    env["CARGO_TARGET_DIR"] = os.path.abspath(target_dir)
    # Use the rustc and rustdoc that sit next to this cargo: with rustup's tools first on PATH,
    # Debian's cargo would otherwise compile with the newer rustc (and fail to read its own
    # crates' metadata in doc tests).
    for tool in ("rustc", "rustdoc"):
        path = os.path.join(os.path.dirname(cargo), tool)
        if os.path.exists(path):
            env[tool.upper()] = path
    # The tests are single-rank: keep a launcher's variables from leaking into them.
    for key in list(env):
        if key.startswith(("OMPI_", "PMI_", "PMIX_", "HVDC_RANK", "HVDC_SIZE", "SLURM_")):
            del env[key]
    return env


def run(command, env):
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, env=env).returncode


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    cargo, libhvdc, target_dir, mode = argv[1:5]
    found = shutil.which(cargo)
    if found is None:
        print(f"skipped: cargo not found at {cargo!r} (install Debian's rustc and cargo, "
              "scripts/setup.sh)", flush=True)
        return 1 if os.environ.get("CI") == "true" else SKIP
    env = cargo_environment(found, libhvdc, target_dir)
    base = [found, "--version"]
    run(base, env)
    if mode == "test":
        return run([found, "test", "--offline", "--manifest-path", MANIFEST], env)
    if mode == "run" and len(argv) >= 7:
        example, launcher = argv[5], argv[6:]
        status = run([found, "build", "--offline", "--manifest-path", MANIFEST, "--examples"], env)
        if status != 0:
            return status
        program = os.path.join(env["CARGO_TARGET_DIR"], "debug", "examples", example)
        # The launched ranks keep the library path but must see the launcher's own variables.
        rank_env = dict(os.environ, LD_LIBRARY_PATH=env["LD_LIBRARY_PATH"])
        return run(launcher + [program], rank_env)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
