#!/usr/bin/env python3
"""hvdcrun from the outside: local mode, failures, signals, delegation to mpirun and srun, usage.

Usage: test_hvdcrun.py HVDCRUN GROUP   (GROUP: local, failure, signals, delegation, usage)

Ranks are rank_prog.sh (next to this file), run through `sh`. Fake `mpirun` and `srun` scripts
first on PATH record their argv and environment instead of launching anything.
"""
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
RANK_PROG = str(HERE / "rank_prog.sh")
HVDCRUN = ""
TAG = re.compile(r"^\[1,(\d+)\]<(stdout|stderr)>:(.*)$")
# Variables of launchers that might be around the test run itself; none may leak into a case.
LAUNCHER_PREFIXES = ("HVDC_", "HOROVOD_", "SLURM_", "OMPI_", "PMI_", "PMIX_", "UCX_", "NCCL_")



def kill_if_running(proc):
    """Leaves no hvdcrun behind when a check failed half-way."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()

def check(cond, message):
    if not cond:
        raise AssertionError(message)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    env.update(extra)
    return env


def run(args, env=None, timeout=60):
    start = time.monotonic()
    proc = subprocess.run([HVDCRUN] + args, env=env or clean_env(), capture_output=True, text=True,
                          timeout=timeout)
    return proc, time.monotonic() - start


def describe(proc):
    return f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


def rank_lines(text, stream):
    """{rank: [line, ...]} for tagged lines; fails on any untagged line."""
    out = {}
    for line in text.splitlines():
        m = TAG.match(line)
        if m is None:
            continue
        check(m.group(2) == stream, f"a {m.group(2)} line on {stream}: {line!r}")
        out.setdefault(int(m.group(1)), []).append(m.group(3))
    return out


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone for our purposes


def pids_in(directory):
    return [int(p.read_text()) for p in pathlib.Path(directory).glob("*.pid")]


def wait_for_pid_files(directory, count, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(list(pathlib.Path(directory).glob("*.pid"))) >= count:
            return pids_in(directory)
        time.sleep(0.05)
    raise AssertionError(f"only {len(pids_in(directory))} of {count} pid files in {directory}")


def check_all_gone(pids):
    left = [p for p in pids if alive(p)]
    for p in left:  # do not leave them behind for the next case
        os.kill(p, signal.SIGKILL)
    check(not left, f"processes still running: {left}")


# ---- local mode ---------------------------------------------------------------------------------

def test_env_per_rank():
    # Values in hvdcrun's own environment must be replaced, not inherited.
    env = clean_env(HVDC_RANK="7", HVDC_SECRET="parent", HVDC_MASTER_PORT="1")
    proc, _ = run(["-np", "3", "-x", "HVDC_TEST_EXTRA=hello", "sh", RANK_PROG, "env", "."], env)
    check(proc.returncode == 0, describe(proc))
    for line in proc.stdout.splitlines():
        check(TAG.match(line), f"untagged stdout line {line!r}")
    lines = rank_lines(proc.stdout, "stdout")
    check(sorted(lines) == [0, 1, 2], f"ranks seen: {sorted(lines)}")
    seen = {}
    for rank, rank_vars in lines.items():
        v = dict(item.split("=", 1) for item in rank_vars)
        expected = {"HVDC_RANK": str(rank), "HVDC_SIZE": "3", "HVDC_LOCAL_RANK": str(rank),
                    "HVDC_LOCAL_SIZE": "3", "HVDC_MASTER_ADDR": "127.0.0.1",
                    "HVDC_BOOTSTRAP": "store", "HVDC_TEST_EXTRA": "hello"}
        for name, value in expected.items():
            check(v.get(name) == value, f"rank {rank}: {name}={v.get(name)!r}, want {value!r}")
        check(1 <= int(v["HVDC_MASTER_PORT"]) <= 65535 and v["HVDC_MASTER_PORT"] != "1",
              f"rank {rank}: port {v['HVDC_MASTER_PORT']}")
        check(re.fullmatch(r"[0-9a-f]{64}", v["HVDC_SECRET"]), f"secret {v['HVDC_SECRET']!r}")
        seen.setdefault("port", set()).add(v["HVDC_MASTER_PORT"])
        seen.setdefault("secret", set()).add(v["HVDC_SECRET"])
    check(len(seen["port"]) == 1 and len(seen["secret"]) == 1, f"ranks disagree: {seen}")
    err = rank_lines(proc.stderr, "stderr")
    for rank in range(3):
        check(err.get(rank) == [f"stderr of rank {rank}"], f"stderr of rank {rank}: {err}")
    again, _ = run(["-np", "1", "sh", RANK_PROG, "env", "."])
    check(seen["secret"].isdisjoint(re.findall(r"HVDC_SECRET=(\w+)", again.stdout)),
          "two runs got the same secret")


def test_partial_lines():
    proc, _ = run(["-np", "3", "sh", RANK_PROG, "partial", "."])
    check(proc.returncode == 0, describe(proc))
    for line in proc.stdout.splitlines():
        check(TAG.match(line), f"a line lost its prefix or was mixed: {line!r}")
    lines = rank_lines(proc.stdout, "stdout")
    want = ["first line", "second line", "no newline at the end"]
    for rank in range(3):
        check(lines.get(rank) == want, f"rank {rank}: {lines.get(rank)}")


def test_program_arguments_are_not_options():
    proc, _ = run(["-np", "2", "sh", "-c", 'echo "args: $*"', "sh", "-np", "--help"])
    check(proc.returncode == 0, describe(proc))
    check(rank_lines(proc.stdout, "stdout") == {0: ["args: -np --help"], 1: ["args: -np --help"]},
          describe(proc))
    proc, _ = run(["-np", "1", "--", "sh", "-c", "exit 0"])
    check(proc.returncode == 0, describe(proc))


def test_program_not_found():
    proc, elapsed = run(["-np", "2", "/nonexistent/program"])
    check(proc.returncode == 127, describe(proc))
    check("cannot run '/nonexistent/program'" in proc.stderr, describe(proc))
    check(elapsed < 10, f"took {elapsed:.1f} s")


def test_iface_not_inherited():
    # Rank 0's store would listen only on HVDC_IFACE while the ranks are told 127.0.0.1.
    env = clean_env(HVDC_IFACE="lo")
    proc, _ = run(["-np", "2", "sh", "-c", 'echo "HVDC_IFACE=${HVDC_IFACE-unset}"'], env)
    check(proc.returncode == 0, describe(proc))
    want = {0: ["HVDC_IFACE=unset"], 1: ["HVDC_IFACE=unset"]}
    check(rank_lines(proc.stdout, "stdout") == want, describe(proc))


# ---- failures -----------------------------------------------------------------------------------

def test_exit_code_propagates():
    with tempfile.TemporaryDirectory() as d:
        proc, elapsed = run(["-np", "4", "sh", RANK_PROG, "fail", d, "2", "3"])
        check(proc.returncode == 3, describe(proc))
        # Three sleeping ranks, each with the child it started.
        check(len(pids_in(d)) == 6, f"pid files: {sorted(os.listdir(d))}")
        check_all_gone(pids_in(d))
    check("rank 2" in proc.stderr and "code 3" in proc.stderr, describe(proc))
    # The others die of SIGTERM at once: no SIGKILL after the grace period.
    check("SIGKILL" not in proc.stderr, describe(proc))
    check(elapsed < 10, f"took {elapsed:.1f} s")


def test_keep_going():
    # A failed rank leaves the others running; the exit status is still the failed rank's.
    with tempfile.TemporaryDirectory() as d:
        proc, elapsed = run(["-np", "3", "--keep-going", "sh", RANK_PROG, "failfirst", d, "1",
                             "4"])
    check(proc.returncode == 4, describe(proc))
    for r in (0, 2):
        check(f"rank {r} finished" in proc.stdout, describe(proc))
    check("--keep-going" in proc.stderr and "stopping" not in proc.stderr, describe(proc))
    check(elapsed < 10, f"took {elapsed:.1f} s")


def test_stubborn_ranks_are_killed():
    with tempfile.TemporaryDirectory() as d:
        proc, elapsed = run(["-np", "3", "sh", RANK_PROG, "fail", d, "0", "5", "stubborn"])
        check(proc.returncode == 5, describe(proc))
        check_all_gone(pids_in(d))
    check("SIGKILL" in proc.stderr, describe(proc))
    check(2.5 <= elapsed < 6, f"took {elapsed:.1f} s; SIGKILL is due 3 s after SIGTERM")


def test_signal_death():
    with tempfile.TemporaryDirectory() as d:
        proc, elapsed = run(["-np", "3", "sh", RANK_PROG, "selfkill", d, "1"])
        check(proc.returncode == 128 + signal.SIGKILL, describe(proc))
        check_all_gone(pids_in(d))
    check("signal 9" in proc.stderr and "SIGKILL" not in proc.stderr, describe(proc))
    check(elapsed < 10, f"took {elapsed:.1f} s")


def test_timeout():
    with tempfile.TemporaryDirectory() as d:
        proc, elapsed = run(["-np", "2", "--timeout", "1", "sh", RANK_PROG, "sleep", d])
        check(proc.returncode == 124, describe(proc))
        check_all_gone(pids_in(d))
    check("--timeout" in proc.stderr, describe(proc))
    check(elapsed < 5, f"took {elapsed:.1f} s")


# ---- signals to hvdcrun -------------------------------------------------------------------------

def signal_job(signals, stubborn=False, np=3):
    """Starts np sleeping ranks, sends `signals` (spaced 0.3 s) to hvdcrun once every rank and its
    child run; returns (exit code, seconds from the first signal to the end, stderr)."""
    with tempfile.TemporaryDirectory() as d:
        args = ["-np", str(np), "sh", RANK_PROG, "sleep", d] + (["stubborn"] if stubborn else [])
        proc = subprocess.Popen([HVDCRUN] + args, env=clean_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            pids = wait_for_pid_files(d, 2 * np)
            start = time.monotonic()
            for k, sig in enumerate(signals):
                if k > 0:
                    time.sleep(0.3)
                proc.send_signal(sig)
            _, err = proc.communicate(timeout=20)
            elapsed = time.monotonic() - start
            check_all_gone(pids)
        finally:
            kill_if_running(proc)
    return proc.returncode, elapsed, err


def test_sigint():
    code, elapsed, err = signal_job([signal.SIGINT])
    check(code == 130, f"exit {code}\n{err}")
    check("SIGINT" in err, err)
    check(elapsed < 5, f"ranks gone after {elapsed:.1f} s")


def test_sigint_stubborn():
    code, elapsed, err = signal_job([signal.SIGINT], stubborn=True)
    check(code == 130, f"exit {code}\n{err}")
    check("SIGKILL" in err, err)
    check(elapsed < 5, f"ranks gone after {elapsed:.1f} s")


def test_sigterm():
    code, elapsed, err = signal_job([signal.SIGTERM])
    check(code == 143, f"exit {code}\n{err}")
    check(elapsed < 5, f"ranks gone after {elapsed:.1f} s")


def test_second_sigint_kills_at_once():
    code, elapsed, err = signal_job([signal.SIGINT, signal.SIGINT], stubborn=True)
    check(code == 130, f"exit {code}\n{err}")
    check(elapsed < 2, f"ranks gone after {elapsed:.1f} s")


def test_sigkill_of_hvdcrun_kills_ranks():
    # hvdcrun cannot forward SIGKILL; the ranks must not outlive it all the same.
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.Popen([HVDCRUN, "-np", "2", "sh", RANK_PROG, "sleep", d],
                                env=clean_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            wait_for_pid_files(d, 4)
            ranks = [int((pathlib.Path(d) / f"{r}.pid").read_text()) for r in range(2)]
            children = [int((pathlib.Path(d) / f"{r}.child.pid").read_text()) for r in range(2)]
            proc.kill()
            proc.wait()
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and any(alive(p) for p in ranks):
                time.sleep(0.05)
            for p in children:  # started by the ranks, not by hvdcrun: not this test's subject
                if alive(p):
                    os.kill(p, signal.SIGKILL)
            check_all_gone(ranks)
        finally:
            kill_if_running(proc)


def test_sigint_with_unread_stdout():
    # hvdcrun ... | less, with less idle: output blocks, and Ctrl-C must still stop the job.
    spam = 'echo $$ > "$0/$HVDC_RANK.tmp" && mv "$0/$HVDC_RANK.tmp" "$0/$HVDC_RANK.pid"; exec yes'
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.Popen([HVDCRUN, "-np", "2", "sh", "-c", spam, d], env=clean_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            pids = wait_for_pid_files(d, 2)
            time.sleep(0.5)  # long enough to fill every pipe
            start = time.monotonic()
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=10)
            elapsed = time.monotonic() - start
            check_all_gone(pids)
        finally:
            kill_if_running(proc)
            proc.stdout.close()
    check(code == 130, f"exit {code}")
    check(elapsed < 5, f"hvdcrun took {elapsed:.1f} s to stop")


# ---- delegation to mpirun and srun --------------------------------------------------------------

FAKE_LAUNCHER = """#!/bin/sh
# Records argv (NUL-separated) and the environment (env -0), then exits with $FAKE_EXIT.
log="$FAKE_LOG_DIR/$(basename "$0")"
: > "$log.argv"
for arg in "$0" "$@"; do printf '%s\\0' "$arg" >> "$log.argv"; done
env -0 > "$log.env"
exit "${FAKE_EXIT:-0}"
"""


class FakeLaunchers:
    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        (self.dir / "bin").mkdir()
        for name in ("mpirun", "srun"):
            path = self.dir / "bin" / name
            path.write_text(FAKE_LAUNCHER)
            path.chmod(0o755)

    def env(self, **extra):
        return clean_env(PATH=f"{self.dir / 'bin'}:{os.environ['PATH']}",
                         FAKE_LOG_DIR=str(self.dir), **extra)

    def argv(self, name):
        return (self.dir / f"{name}.argv").read_text().split("\0")[:-1]

    def environ(self, name):
        items = (self.dir / f"{name}.env").read_text().split("\0")[:-1]
        return dict(item.split("=", 1) for item in items)

    def ran(self, name):
        return (self.dir / f"{name}.argv").exists()


def x_exports(argv):
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-x"]


def adjacent(argv, *words):
    n = len(words)
    return any(argv[i:i + n] == list(words) for i in range(len(argv) - n + 1))


def test_mpirun_hosts():
    fake = FakeLaunchers()
    env = fake.env(HVDC_LOG_LEVEL="info", HOROVOD_FUSION_THRESHOLD="0", UCX_TLS="tcp",
                   NCCL_DEBUG="INFO", HVDC_RANK="5", HVDC_LOCAL_RANK="1", UNRELATED="1",
                   FAKE_EXIT="5")
    proc, _ = run(["-np", "8", "-H", "a:4,b:4", "-x", "FOO=bar", "-x", "HVDC_LOG_LEVEL=debug",
                   "prog", "arg1", "arg two"], env)
    check(proc.returncode == 5, "mpirun's exit code is hvdcrun's\n" + describe(proc))
    argv = fake.argv("mpirun")
    check(os.path.basename(argv[0]) == "mpirun" and argv[1:3] == ["-np", "8"], argv)
    check(adjacent(argv, "-H", "a:4,b:4"), argv)
    check(adjacent(argv, "--bind-to", "none"), argv)
    check("--tag-output" in argv and "--allow-run-as-root" not in argv, argv)
    check(argv[-3:] == ["prog", "arg1", "arg two"], argv)
    exports = x_exports(argv)
    for want in ("HVDC_SECRET", "HVDC_LOG_LEVEL=debug", "HOROVOD_FUSION_THRESHOLD", "UCX_TLS",
                 "NCCL_DEBUG", "FOO=bar", "PATH"):
        check(want in exports, f"-x {want} missing: {exports}")
    for unwanted in ("HVDC_RANK", "HVDC_LOCAL_RANK", "UNRELATED", "HVDC_LOG_LEVEL"):
        check(unwanted not in exports, f"-x {unwanted} must not be passed: {exports}")
    seen_env = fake.environ("mpirun")
    secret = seen_env.get("HVDC_SECRET", "")
    check(re.fullmatch(r"[0-9a-f]{64}", secret), f"HVDC_SECRET={secret!r}")
    check(not any(secret in a for a in argv), "the secret must not be on the command line")
    check("HVDC_RANK" not in seen_env and "HVDC_LOCAL_RANK" not in seen_env,
          "per-rank variables reach mpirun's local ranks")


def test_mpirun_hostfile_and_flags():
    fake = FakeLaunchers()
    hostfile = fake.dir / "hosts"
    hostfile.write_text("a slots=2\nb slots=2\n")
    proc, _ = run(["-np", "4", "--hostfile", str(hostfile), "--oversubscribe",
                   "--allow-run-as-root", "--launcher-arg", "--mca",
                   "--launcher-arg=btl_tcp_if_include=lo", "prog"], fake.env())
    check(proc.returncode == 0, describe(proc))
    argv = fake.argv("mpirun")
    check(argv[1:3] == ["-np", "4"] and adjacent(argv, "--hostfile", str(hostfile)), argv)
    check("--oversubscribe" in argv and "--allow-run-as-root" in argv, argv)
    check(adjacent(argv, "--bind-to", "none") and "-H" not in argv, argv)
    check(argv[-3:] == ["--mca", "btl_tcp_if_include=lo", "prog"], argv)
    check("orte_abort_on_non_zero_status" not in argv, argv)
    proc, _ = run(["-np", "2", "-H", "a:2", "--keep-going", "prog"], fake.env())
    check(proc.returncode == 0, describe(proc))
    check(adjacent(fake.argv("mpirun"), "orte_abort_on_non_zero_status", "0"),
          fake.argv("mpirun"))


def test_srun():
    fake = FakeLaunchers()
    env = fake.env(SLURM_JOB_ID="123", SLURM_JOB_NODELIST="node[07-09,12],gpu1", HVDC_RANK="3",
                   HVDC_SIZE="4")
    proc, _ = run(["-np", "4", "--srun", "-x", "FOO=bar", "prog", "a"], env)
    check(proc.returncode == 0, describe(proc))
    argv = fake.argv("srun")
    check(os.path.basename(argv[0]) == "srun" and adjacent(argv, "-n", "4"), argv)
    for flag in ("--export=ALL", "--kill-on-bad-exit=1", "--cpu-bind=none", "--label"):
        check(flag in argv, f"{flag} missing: {argv}")
    check(argv[-2:] == ["prog", "a"], argv)
    seen_env = fake.environ("srun")
    check(re.fullmatch(r"[0-9a-f]{64}", seen_env.get("HVDC_SECRET", "")), seen_env)
    check(seen_env.get("HVDC_BOOTSTRAP") == "store", seen_env.get("HVDC_BOOTSTRAP"))
    check(seen_env.get("HVDC_MASTER_ADDR") == "node07", seen_env.get("HVDC_MASTER_ADDR"))
    check(20000 <= int(seen_env.get("HVDC_MASTER_PORT", "0")) < 40000,
          seen_env.get("HVDC_MASTER_PORT"))
    check(seen_env.get("FOO") == "bar", seen_env.get("FOO"))
    check("HVDC_RANK" not in seen_env and "HVDC_SIZE" not in seen_env,
          "per-rank variables must not reach srun's tasks")
    # A master chosen by the user stays.
    env.update(HVDC_MASTER_ADDR="10.1.2.3", HVDC_MASTER_PORT="31337")
    proc, _ = run(["-np", "2", "--srun", "prog"], env)
    check(proc.returncode == 0, describe(proc))
    seen_env = fake.environ("srun")
    check(seen_env.get("HVDC_MASTER_ADDR") == "10.1.2.3", seen_env.get("HVDC_MASTER_ADDR"))
    check(seen_env.get("HVDC_MASTER_PORT") == "31337", seen_env.get("HVDC_MASTER_PORT"))
    proc, _ = run(["-np", "2", "--srun", "--keep-going", "prog"], env)
    check(proc.returncode == 0 and "--kill-on-bad-exit=0" in fake.argv("srun"),
          fake.argv("srun"))


def test_srun_outside_slurm():
    fake = FakeLaunchers()
    proc, _ = run(["-np", "2", "--srun", "prog"], fake.env())
    check(proc.returncode == 2, describe(proc))
    check("SLURM_JOB_ID" in proc.stderr, describe(proc))
    check(not fake.ran("srun"), "srun must not run outside an allocation")


def test_launcher_not_found():
    with tempfile.TemporaryDirectory() as empty:
        proc, _ = run(["-np", "2", "-H", "a:2", "prog"], clean_env(PATH=empty))
    check(proc.returncode == 127, describe(proc))
    check("mpirun" in proc.stderr, describe(proc))


# ---- usage --------------------------------------------------------------------------------------

def test_help():
    proc, _ = run(["--help"])
    check(proc.returncode == 0, describe(proc))
    for word in ("-np", "-H", "--hostfile", "--srun", "-x", "--timeout", "--launcher-arg",
                 "--oversubscribe", "--allow-run-as-root", "--verbose", "--help", "--version",
                 "HVDC_RANK", "HVDC_SIZE", "HVDC_LOCAL_RANK", "HVDC_LOCAL_SIZE", "HVDC_MASTER_ADDR",
                 "HVDC_MASTER_PORT", "HVDC_SECRET", "HVDC_BOOTSTRAP=store", "[1,R]<stdout>:",
                 "--bind-to none", "--kill-on-bad-exit=1", "130", "Exit status"):
        check(word in proc.stdout, f"--help does not mention {word}")


def test_version():
    proc, _ = run(["--version"])
    check(proc.returncode == 0 and proc.stdout.startswith("hvdcrun (hvdc "), describe(proc))


def test_usage_errors():
    cases = [
        ([], ["-np is required"]),
        (["-np"], ["-np needs a value"]),
        (["-np", "abc", "prog"], ["-np", "'abc'"]),
        (["-np", "0", "prog"], ["-np", "'0'"]),
        (["-np", "2"], ["no program"]),
        (["-np", "2", "-H", "a:x", "prog"], ["-H", "'a:x'"]),
        (["-np", "2", "-H", "a:2,", "prog"], ["-H", "'a:2,'"]),
        (["-np", "2", "-H", "a:2", "--hostfile", "/etc/hostname", "prog"], ["-H and --hostfile"]),
        (["-np", "2", "--srun", "-H", "a:2", "prog"], ["--srun"]),
        (["-np", "2", "--bogus", "prog"], ["--bogus"]),
        (["-np", "2", "-x", "1BAD=2", "prog"], ["-x", "'1BAD=2'"]),
        (["-np", "2", "--timeout", "soon", "prog"], ["--timeout", "'soon'"]),
        (["-np", "2", "--timeout", "5", "-H", "a:2", "prog"], ["--timeout"]),
        (["-np", "2", "--hostfile", "/nonexistent/hosts", "prog"], ["--hostfile",
                                                                    "/nonexistent/hosts"]),
        (["-np", "2", "--oversubscribe", "prog"], ["--oversubscribe"]),
        (["-np", "2", "--launcher-arg", "x", "prog"], ["--launcher-arg"]),
        (["--srun=yes", "-np", "2", "prog"], ["--srun takes no value"]),
    ]
    for args, words in cases:
        proc, _ = run(args)
        check(proc.returncode == 2, f"{args}: " + describe(proc))
        for word in words + ["--help"]:
            check(word in proc.stderr, f"{args}: stderr lacks {word!r}: {proc.stderr!r}")


GROUPS = {
    "local": [test_env_per_rank, test_partial_lines, test_program_arguments_are_not_options,
              test_program_not_found, test_iface_not_inherited],
    "failure": [test_exit_code_propagates, test_keep_going, test_stubborn_ranks_are_killed,
                test_signal_death, test_timeout],
    "signals": [test_sigint, test_sigint_stubborn, test_sigterm, test_second_sigint_kills_at_once,
                test_sigkill_of_hvdcrun_kills_ranks, test_sigint_with_unread_stdout],
    "delegation": [test_mpirun_hosts, test_mpirun_hostfile_and_flags, test_srun,
                   test_srun_outside_slurm, test_launcher_not_found],
    "usage": [test_help, test_version, test_usage_errors],
}


def main():
    global HVDCRUN
    if len(sys.argv) != 3 or sys.argv[2] not in GROUPS:
        sys.exit(f"usage: {sys.argv[0]} HVDCRUN {{{','.join(GROUPS)}}}")
    HVDCRUN = os.path.abspath(sys.argv[1])
    failed = 0
    for test in GROUPS[sys.argv[2]]:
        start = time.monotonic()
        try:
            test()
            print(f"ok   {test.__name__} ({time.monotonic() - start:.1f} s)")
        except Exception as e:  # report every case, then fail
            failed += 1
            print(f"FAIL {test.__name__}: {type(e).__name__}: {e}")
    print(f"{len(GROUPS[sys.argv[2]]) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
