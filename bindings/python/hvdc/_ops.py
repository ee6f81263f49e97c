"""Collectives with Horovod's names: each *_async returns a Handle; the plain form waits."""
import ctypes
import operator

from . import _errors, _ffi, _handles, _lifecycle, _tensors
from ._tensors import export

Average = _ffi.HVD_OP_AVERAGE
Sum = _ffi.HVD_OP_SUM
Min = _ffi.HVD_OP_MIN
Max = _ffi.HVD_OP_MAX
Product = _ffi.HVD_OP_PRODUCT


# Every op with a tensor also takes these keyword-only arguments, which apply to CUDA tensors
# (CPU tensors ignore them, as the C layer does):
#   cuda_stream: the stream the op is ordered after: an int address (0: the legacy default
#       stream) or an object carrying it, as torch.cuda.Stream's `cuda_stream` or cupy's
#       Stream `ptr`; None is the default stream.
#   stream_ordered: later work on cuda_stream sees the result without waiting on the host.
#   host_path: stage through pinned host memory and reduce on the host (Horovod's
#       device_dense='/cpu:0'); every rank must pass the same choice.


def _stream_address(cuda_stream):
    """The cudaStream_t as an int, from an address or an object that carries one."""
    if cuda_stream is None:
        return 0
    value = cuda_stream
    for attribute in ("cuda_stream", "ptr"):
        if hasattr(cuda_stream, attribute):
            value = getattr(cuda_stream, attribute)
            break
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)  # ints, numpy integers; not floats or strings
    except TypeError:
        raise TypeError(f"cuda_stream: expected None, an int address or an object with "
                        f".cuda_stream or .ptr, got {type(cuda_stream).__name__}") from None
    if value < 0:
        raise ValueError(f"cuda_stream: address {value} is negative")
    return value


def _op_args(process_set, prescale_factor=1.0, postscale_factor=1.0, cuda_stream=None,
             stream_ordered=False, host_path=False):
    args = _ffi.hvd_op_args_t()
    _errors.call("hvd_op_args_init", ctypes.byref(args), ctypes.sizeof(args))
    args.process_set = _lifecycle.process_set_id(process_set)
    args.prescale_factor = float(prescale_factor)
    args.postscale_factor = float(postscale_factor)
    args.cuda_stream = _stream_address(cuda_stream) or None
    args.flags = ((_ffi.HVD_OP_STREAM_ORDERED if stream_ordered else 0)
                  | (_ffi.HVD_OP_HOST_PATH if host_path else 0))
    return args


def _name(name):
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError(f"name: expected a str or None, got {type(name).__name__}")
    return name.encode()


def _submit(fn, c_args, exports, finish, on_done, keep=()):
    """Calls an hvd_*_async function (its handle pointer last) and wraps the handle."""
    handle = _ffi.hvd_handle_t()
    status = getattr(_ffi.lib, fn)(*c_args, ctypes.byref(handle))
    if status < 0:
        error = _errors.error_for(status)
        for ex in exports:
            ex.release()
        raise error
    return _handles.Handle(handle.value, exports, finish, on_done, keep)


def _returns(value):
    return lambda _handle: (value, True)


def _output_of(like):
    def finish(handle):
        out = _ffi.hvd_tensor_t()
        _errors.call("hvd_handle_output", handle.id, ctypes.byref(out))
        shape = [out.shape[i] for i in range(out.ndim)]
        if out.data is None:  # nothing to share: an empty result needs no library memory
            return _tensors.empty_like(like, out, shape), True
        owner = _handles.OutputOwner(handle.id)
        return _tensors.wrap_library_output(like, owner, out), False
    return finish


def allreduce_async(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=None, on_done=None, output=None,
                    *, cuda_stream=None, stream_ordered=False, host_path=False):
    """output=: an array to reduce into (an extension of Horovod's API: no allocation per call);
    by default a new array of the input's kind."""
    _lifecycle.enter()
    args = _op_args(process_set, prescale_factor, postscale_factor, cuda_stream, stream_ordered,
                    host_path)
    inp = export(tensor, "tensor")
    try:
        if output is None:
            output = _tensors.empty_like(tensor, inp)
        out = export(output, "output", writable=True)
    except Exception:
        inp.release()
        raise
    if (out.tensor.dtype, out.nbytes) != (inp.tensor.dtype, inp.nbytes):
        inp.release()
        out.release()
        raise ValueError(f"output: {out.nbytes} bytes of dtype {out.tensor.dtype}, but tensor "
                         f"has {inp.nbytes} bytes of dtype {inp.tensor.dtype}")
    return _submit("hvd_allreduce_async",
                   [ctypes.byref(inp.tensor), out.tensor.data, op, _name(name), ctypes.byref(args)],
                   [inp, out], _returns(output), on_done, keep=(args,))


def allreduce_async_(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=None, on_done=None,
                     *, cuda_stream=None, stream_ordered=False, host_path=False):
    _lifecycle.enter()
    args = _op_args(process_set, prescale_factor, postscale_factor, cuda_stream, stream_ordered,
                    host_path)
    inp = export(tensor, "tensor", writable=True)
    return _submit("hvd_allreduce_async",
                   [ctypes.byref(inp.tensor), inp.tensor.data, op, _name(name), ctypes.byref(args)],
                   [inp], _returns(tensor), on_done, keep=(args,))


def allreduce(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
              process_set=None, output=None,
              *, cuda_stream=None, stream_ordered=False, host_path=False):
    return allreduce_async(tensor, name, op, prescale_factor, postscale_factor, process_set,
                           output=output, cuda_stream=cuda_stream,
                           stream_ordered=stream_ordered, host_path=host_path).wait()


def allreduce_(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
               process_set=None, *, cuda_stream=None, stream_ordered=False, host_path=False):
    return allreduce_async_(tensor, name, op, prescale_factor, postscale_factor, process_set,
                            cuda_stream=cuda_stream, stream_ordered=stream_ordered,
                            host_path=host_path).wait()


def grouped_allreduce_async(tensors, name=None, op=Average, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=None, on_done=None,
                            *, cuda_stream=None, stream_ordered=False, host_path=False):
    """One handle for the list; members are named "<name>.<i>" (automatic names without one)."""
    _lifecycle.enter()
    args = _op_args(process_set, prescale_factor, postscale_factor, cuda_stream, stream_ordered,
                    host_path)
    tensors = list(tensors)
    outputs, exports = [], []
    try:
        for i, t in enumerate(tensors):
            exports.append(export(t, f"tensors[{i}]"))
            outputs.append(_tensors.empty_like(t, exports[-1]))
            exports.append(export(outputs[-1], f"outputs[{i}]", writable=True))
    except Exception:
        for ex in exports:
            ex.release()
        raise
    count = len(tensors)
    inputs = (_ffi.hvd_tensor_t * max(1, count))(*[ex.tensor for ex in exports[0::2]])
    out_ptrs = (ctypes.c_void_p * max(1, count))(*[ex.tensor.data for ex in exports[1::2]])
    names = None
    if name is not None:
        names = (ctypes.c_char_p * max(1, count))(*[_name(f"{name}.{i}") for i in range(count)])
    return _submit("hvd_grouped_allreduce_async",
                   [inputs, out_ptrs, count, op, names, ctypes.byref(args)], exports,
                   _returns(outputs), on_done, keep=(args, inputs, out_ptrs, names))


def grouped_allreduce(tensors, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=None,
                      *, cuda_stream=None, stream_ordered=False, host_path=False):
    return grouped_allreduce_async(tensors, name, op, prescale_factor, postscale_factor,
                                   process_set, cuda_stream=cuda_stream,
                                   stream_ordered=stream_ordered, host_path=host_path).wait()


def allgather_async(tensor, name=None, process_set=None, on_done=None,
                    *, cuda_stream=None, stream_ordered=False, host_path=False):
    """Concatenation along the first dimension; the result shares the library's buffer."""
    _lifecycle.enter()
    args = _op_args(process_set, 1.0, 1.0, cuda_stream, stream_ordered, host_path)
    inp = export(tensor, "tensor")
    return _submit("hvd_allgather_async", [ctypes.byref(inp.tensor), _name(name),
                                           ctypes.byref(args)],
                   [inp], _output_of(tensor), on_done, keep=(args,))


def allgather(tensor, name=None, process_set=None,
              *, cuda_stream=None, stream_ordered=False, host_path=False):
    return allgather_async(tensor, name, process_set, cuda_stream=cuda_stream,
                           stream_ordered=stream_ordered, host_path=host_path).wait()


def broadcast_async(tensor, root_rank, name=None, process_set=None, on_done=None,
                    *, cuda_stream=None, stream_ordered=False, host_path=False):
    _lifecycle.enter()
    args = _op_args(process_set, 1.0, 1.0, cuda_stream, stream_ordered, host_path)
    inp = export(tensor, "tensor")
    output = _tensors.empty_like(tensor, inp)
    try:
        out = export(output, "output", writable=True)
    except Exception:
        inp.release()
        raise
    return _submit("hvd_broadcast_async", [ctypes.byref(inp.tensor), out.tensor.data,
                                           int(root_rank), _name(name), ctypes.byref(args)],
                   [inp, out], _returns(output), on_done, keep=(args,))


def broadcast_async_(tensor, root_rank, name=None, process_set=None, on_done=None,
                     *, cuda_stream=None, stream_ordered=False, host_path=False):
    _lifecycle.enter()
    args = _op_args(process_set, 1.0, 1.0, cuda_stream, stream_ordered, host_path)
    inp = export(tensor, "tensor", writable=True)
    return _submit("hvd_broadcast_async", [ctypes.byref(inp.tensor), inp.tensor.data,
                                           int(root_rank), _name(name), ctypes.byref(args)],
                   [inp], _returns(tensor), on_done, keep=(args,))


def broadcast(tensor, root_rank, name=None, process_set=None,
              *, cuda_stream=None, stream_ordered=False, host_path=False):
    return broadcast_async(tensor, root_rank, name, process_set, cuda_stream=cuda_stream,
                           stream_ordered=stream_ordered, host_path=host_path).wait()


def broadcast_(tensor, root_rank, name=None, process_set=None,
               *, cuda_stream=None, stream_ordered=False, host_path=False):
    return broadcast_async_(tensor, root_rank, name, process_set, cuda_stream=cuda_stream,
                            stream_ordered=stream_ordered, host_path=host_path).wait()


def _alltoall_result(like):
    output_of = _output_of(like)

    def finish(handle):
        count = ctypes.c_int32()
        set_id = getattr(handle, "process_set_id", 0)
        _errors.call("hvd_process_set_size", set_id, ctypes.byref(count))
        splits = (ctypes.c_int32 * max(1, count.value))()
        _errors.call("hvd_handle_received_splits", handle.id, splits, count.value)
        output, owned = output_of(handle)
        return (output, list(splits[:count.value])), owned
    return finish


def alltoall_async(tensor, splits=None, name=None, process_set=None, on_done=None,
                   *, cuda_stream=None, stream_ordered=False, host_path=False):
    """Result: (output, received_splits). splits: rows of the first dimension for each rank."""
    _lifecycle.enter()
    args = _op_args(process_set, 1.0, 1.0, cuda_stream, stream_ordered, host_path)
    c_splits = None
    if splits is not None:
        splits = [int(s) for s in splits]
        c_splits = (ctypes.c_int32 * max(1, len(splits)))(*splits)
    inp = export(tensor, "tensor")
    handle = _submit("hvd_alltoall_async", [ctypes.byref(inp.tensor), c_splits, _name(name),
                                            ctypes.byref(args)],
                     [inp], _alltoall_result(tensor), on_done, keep=(args, c_splits))
    handle.process_set_id = args.process_set
    return handle


def alltoall(tensor, splits=None, name=None, process_set=None,
             *, cuda_stream=None, stream_ordered=False, host_path=False):
    return alltoall_async(tensor, splits, name, process_set, cuda_stream=cuda_stream,
                          stream_ordered=stream_ordered, host_path=host_path).wait()


def _my_rows(first_dim, process_set):
    rank, count = _lifecycle.set_rank_and_size(process_set)
    return first_dim // count + (1 if rank < first_dim % count else 0)


def reducescatter_async(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=None, on_done=None,
                        *, cuda_stream=None, stream_ordered=False, host_path=False):
    """This rank's rows of the reduction; the first shape[0] % size ranks get one row more."""
    _lifecycle.enter()
    args = _op_args(process_set, prescale_factor, postscale_factor, cuda_stream, stream_ordered,
                    host_path)
    inp = export(tensor, "tensor")
    try:
        if not inp.shape:
            raise ValueError("tensor: reducescatter needs at least one dimension")
        shape = [_my_rows(inp.shape[0], process_set)] + list(inp.shape[1:])
        output = _tensors.empty_like(tensor, inp, shape)
        out = export(output, "output", writable=True)
    except Exception:
        inp.release()
        raise
    return _submit("hvd_reducescatter_async",
                   [ctypes.byref(inp.tensor), out.tensor.data, op, _name(name), ctypes.byref(args)],
                   [inp, out], _returns(output), on_done, keep=(args,))


def reducescatter(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=None, *, cuda_stream=None, stream_ordered=False, host_path=False):
    return reducescatter_async(tensor, name, op, prescale_factor, postscale_factor,
                               process_set, cuda_stream=cuda_stream,
                               stream_ordered=stream_ordered, host_path=host_path).wait()


def barrier(process_set=None, name=None):
    _lifecycle.enter()
    args = _op_args(process_set)
    _submit("hvd_barrier_async", [_name(name), ctypes.byref(args)], [], _returns(None), None,
            keep=(args,)).wait()


def join():
    """Blocks until every rank joined; returns the last rank to join."""
    _lifecycle.enter()
    last = ctypes.c_int32(-1)
    _errors.call("hvd_join", ctypes.byref(last))
    return last.value


def synchronize(handle):
    """Waits for an *_async op and returns its result (raises its HvdcError on failure)."""
    _lifecycle.enter()
    return handle.wait()


def poll(handle):
    """True once the op has ended (without blocking); on_done runs here when it has."""
    _lifecycle.enter()
    return handle.test()
