"""Handles: the Python side of an op in flight.

A Handle keeps its inputs and outputs (and their pinned memory) alive until the op ends. Python
never runs on the engine thread for it: completion is observed by synchronize() or poll() on the
caller's thread, which also runs on_done. A handle dropped while its op runs is not freed by the
finalizer (hvd_handle_free may wait, and a finalizer can run anywhere): its id and references go
to a queue that the next binding call frees, on a Python thread.
"""
import collections
import ctypes
import sys
import threading

from . import _errors, _ffi

_free_queue = collections.deque()  # (handle id, references to drop after the free)
_leaked_at_exit = []  # what was still in flight while the interpreter finalized
_drain_lock = threading.Lock()


def drain_free_queue():
    """Frees handles that finalizers queued. Called at the start of binding calls."""
    if not _free_queue:
        return
    with _drain_lock:
        while _free_queue:
            handle_id, refs = _free_queue.popleft()
            _ffi.lib.hvd_handle_free(handle_id)  # waits for the op; a failure is moot here
            for ref in refs:
                release = getattr(ref, "release", None)
                if release is not None:
                    release()


def pending_frees():
    return len(_free_queue)


class OutputOwner:
    """Owns a handle whose library-allocated output an array still uses; frees it when the
    last such array is gone (through the queue, since that may happen on any thread)."""

    def __init__(self, handle_id):
        self.handle_id = handle_id

    def __del__(self):
        if sys.is_finalizing():
            return
        _free_queue.append((self.handle_id, ()))


class Handle:
    """An op in flight. Use hvdc.synchronize(handle) or hvdc.poll(handle)."""

    def __init__(self, handle_id, exports, finish, on_done, keep=()):
        self._id = handle_id
        self._exports = exports  # Export objects released when the op ends
        self._keep = keep  # other objects the library reads while the op runs
        self._finish = finish  # handle -> result, called once on success
        self._on_done = on_done
        self._completed = False
        self._result = None
        self._error = None
        self._lock = threading.RLock()  # on_done may call synchronize on its own handle

    @property
    def id(self):
        return self._id

    def _complete(self, status):
        """Records the outcome once; runs on the thread that observed the end of the op."""
        message = _ffi.lib.hvd_last_error_message().decode(errors="replace") if status < 0 else ""
        handle_id, owned = self._id, True
        try:
            if status >= 0:
                self._result, owned = self._finish(self)
            else:
                self._error = _errors.error_for(status, message)
        except Exception as exc:  # a failure while building the result fails the handle
            self._error = exc
        finally:
            self._completed = True
            for ex in self._exports:
                ex.release()
            self._exports, self._keep = (), ()
            if owned:
                _ffi.lib.hvd_handle_free(handle_id)
        if self._on_done is not None:
            self._on_done(self)

    def wait(self):
        with self._lock:
            if not self._completed:
                self._complete(_ffi.lib.hvd_wait(self._id))
        if self._error is not None:
            raise self._error
        return self._result

    def test(self):
        with self._lock:
            if self._completed:
                return True
            done = ctypes.c_int32(0)
            status = _ffi.lib.hvd_test(self._id, ctypes.byref(done))
            if status < 0 and not done.value:
                raise _errors.error_for(status)  # the handle itself is bad
            if done.value:
                self._complete(status)
            return bool(done.value)

    def __del__(self):
        if getattr(self, "_completed", True):
            return
        refs = list(self._exports) + list(self._keep)
        if sys.is_finalizing():
            _leaked_at_exit.append(refs)  # nothing is freed while the interpreter finalizes
            return
        _free_queue.append((self._id, refs))
