"""Run under a launcher at np >= 3: rank 1 dies by SIGKILL after one allreduce; every survivor
must get HvdcPeerFailureError from its next allreduce. Prints one verdict line per survivor."""
import os
import signal
import time

import numpy as np

import hvdc

hvdc.init()
rank = hvdc.rank()
hvdc.allreduce(np.ones(4, np.float32), name="before")
if rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
start = time.monotonic()
try:
    hvdc.allreduce(np.ones(1 << 20, np.float32), name="after")
    print(f"FAIL rank {rank}: the allreduce after the kill succeeded", flush=True)
except hvdc.HvdcPeerFailureError as exc:
    print(f"PEER_FAILURE rank {rank} after {time.monotonic() - start:.1f} s: {exc}", flush=True)
except hvdc.HvdcError as exc:
    print(f"FAIL rank {rank}: {type(exc).__name__}: {exc}", flush=True)
try:
    hvdc.shutdown()
except hvdc.HvdcBootstrapError:
    pass  # the dead rank never reaches the shutdown barrier; the survivors are done anyway
