#!/usr/bin/env python3
"""Finite-difference checks of the Python twin's blocks (examples/python/layers.py), one process.

usage: python_gradient_check.py   (numpy needed: run_python_trainer.sh runs it in the test venv)

Each block runs in float64 (its parameters are cast), and its analytic gradients of
sum(probe * output) with respect to the input and every parameter must match central
differences to 1e-6, relative to the gradient's size. The inputs are random, so ReLU's kink and
max-pooling's ties are hit with probability zero.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "python"))
from layers import (Conv2D, Dense, Dropout, Flatten, MaxPool2D, ParameterDict,  # noqa: E402
                    ReLU, SoftmaxCrossEntropy, build_model)

STEP, TOLERANCE, PROBES = 1e-6, 1e-6, 12


def in_float64(block):
    for parameter in getattr(block, "parameters", ()):
        parameter.data = parameter.data.astype(np.float64)
        parameter.grad = parameter.grad.astype(np.float64)
    return block


def numerical(objective, array, index):
    saved = array[index]
    array[index] = saved + STEP
    above = objective()
    array[index] = saved - STEP
    below = objective()
    array[index] = saved
    return (above - below) / (2 * STEP)


def compare(what, analytic, objective, array, rng):
    """Central differences at PROBES random entries of array against analytic."""
    scale = max(1.0, float(np.abs(analytic).max()))
    for flat in rng.choice(array.size, min(PROBES, array.size), replace=False):
        index = np.unravel_index(flat, array.shape)
        estimate = numerical(objective, array, index)
        if abs(estimate - analytic[index]) > TOLERANCE * scale:
            print(f"FAIL: {what}{list(index)}: analytic {analytic[index]:.9g}, "
                  f"finite difference {estimate:.9g}")
            return False
    return True


def check_block(name, block, input_shape, rng):
    block = in_float64(block)
    x = rng.standard_normal(input_shape)
    probe = rng.standard_normal(block.forward(x, False, None).shape)

    def objective():
        return float((probe * block.forward(x, False, None)).sum())

    block.forward(x, False, None)
    grad_input = block.backward(probe)
    grads = {p.name: p.grad.copy() for p in block.parameters}
    ok = compare(f"{name} d/dinput", grad_input, objective, x, rng)
    for parameter in block.parameters:
        ok &= compare(f"{name} d/d{parameter.name}", grads[parameter.name], objective,
                      parameter.data, rng)
    print(f"{'ok' if ok else 'FAILED'}: {name}")
    return ok


def check_loss(rng):
    loss = SoftmaxCrossEntropy()
    logits, labels = rng.standard_normal((5, 10)), rng.integers(0, 10, 5)
    loss.forward(logits, labels)
    ok = compare("softmax cross-entropy", loss.backward(),
                 lambda: float(loss.forward(logits, labels).sum()), logits, rng)
    print(f"{'ok' if ok else 'FAILED'}: softmax cross-entropy")
    return ok


def check_dropout(rng):
    """Training draws a mask: backward must apply the same mask, and kept units are scaled so
    the expected output is the input."""
    block, x = Dropout(0.25), np.ones((200, 50))
    out = block.forward(x, True, rng)
    probe = rng.standard_normal(x.shape)
    ok = np.array_equal(block.backward(probe), probe * block.mask)
    ok &= abs(out.mean() - 1.0) < 0.05 and set(np.unique(out)) <= {0.0, np.float32(1 / 0.75)}
    ok &= np.array_equal(block.forward(x, False, None), x)
    print(f"{'ok' if ok else 'FAILED'}: dropout")
    return bool(ok)


def main():
    rng = np.random.default_rng(11)
    params = ParameterDict()
    cases = [
        ("dense", Dense(params, "dense", 7, 5, rng), (4, 7)),
        ("relu", ReLU(), (4, 6)),
        ("flatten", Flatten(), (3, 2, 4, 4)),
        ("conv2d 3x3 pad 1", Conv2D(params, "conv_a", 2, 3, 3, 1, rng), (2, 2, 5, 6)),
        ("conv2d 3x3 pad 0", Conv2D(params, "conv_b", 3, 2, 3, 0, rng), (2, 3, 5, 5)),
        ("maxpool2d 2 (odd size)", MaxPool2D(2), (2, 3, 5, 4)),
    ]
    net, _ = build_model("cnn", (1, 8, 8), 10, 0.0, init_seed=3)
    cases.append(("cnn, whole network", net, (3, 1, 8, 8)))
    ok = all([check_block(name, block, shape, rng) for name, block, shape in cases])
    ok &= check_loss(rng) & check_dropout(rng)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
