"""A killed peer: every survivor raises HvdcPeerFailureError (hvdcrun -np 3, --keep-going so
the launcher leaves the survivors running when rank 1 dies)."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_killed_peer_raises_peer_failure_on_every_survivor():
    np_ = 3
    run = subprocess.run([os.environ["HVDCRUN"], "-np", str(np_), "--keep-going", sys.executable,
                          os.path.join(HERE, "fault_peer.py")],
                         capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    print(out)
    assert "FAIL rank" not in out
    survivors = sorted(int(r) for r in re.findall(r"PEER_FAILURE rank (\d+) after", out))
    assert survivors == [r for r in range(np_) if r != 1]
    for seconds in re.findall(r"PEER_FAILURE rank \d+ after ([\d.]+) s", out):
        assert float(seconds) <= 10.0  # the engine's bound for a dead peer
