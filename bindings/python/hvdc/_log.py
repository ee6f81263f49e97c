"""The library's log lines into the `logging` logger "hvdc".

The C callback may run on the engine thread: it only puts the record on a queue (no lock that a
Python thread could hold for long, no hvdc call). Records reach `logging` on a Python thread, at
the next binding call (flush()).
"""
import logging
import queue

from . import _errors, _ffi

logger = logging.getLogger("hvdc")
_LEVELS = {0: 5, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
_records = queue.SimpleQueue()


@_ffi.hvd_log_fn
def _on_log(_user_data, level, message):
    _records.put_nowait((level, message))


def flush():
    while True:
        try:
            level, message = _records.get_nowait()
        except queue.Empty:
            return
        text = message.decode(errors="replace").rstrip("\n") if message else ""
        logger.log(_LEVELS.get(level, logging.ERROR), "%s", text)


def install():
    _errors.call("hvd_set_log_callback", _on_log, None)


def uninstall():
    _errors.call("hvd_set_log_callback", _ffi.hvd_log_fn(), None)
    flush()
