"""Optimizers, the single-process Trainer, and the DistributedTrainer that averages gradients over
every rank with hvdc, as Horovod's hvd.DistributedTrainer does for MXNet Gluon.

The DistributedTrainer is where the framework meets hvdc:
 1. attach(net) installs a hook in the network's backward. Each time a block has written its
    gradients, the hook starts one named asynchronous allreduce (Average) per gradient, in place.
    Gradients become ready last layer first, so the last layers' gradients travel while the first
    layers are still being differentiated, and hvdc fuses small ones into larger messages.
 2. step(batch_size) waits for every pending allreduce, then updates. Every rank then holds the
    same averaged gradients and takes the same update.
The name ("grad.<parameter name>") pairs the tensors up across ranks, whatever order the ranks
finish them in.
"""
import time

import numpy as np

import hvdc


class SGD:
    """v = momentum * v + g;  w -= lr * v."""
    name = "sgd"

    def __init__(self, params, learning_rate, momentum=0.9):
        self.learning_rate, self.momentum = np.float32(learning_rate), np.float32(momentum)
        self.velocity = [np.zeros_like(p.data) for p in params.values()]

    def update(self, index, parameter, rescale, step):
        velocity = self.velocity[index]
        velocity *= self.momentum
        velocity += rescale * parameter.grad
        parameter.data -= self.learning_rate * velocity

    def state(self):
        return self.velocity


class Adam:
    """Kingma and Ba's Adam with bias correction."""
    name = "adam"

    def __init__(self, params, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8):
        self.learning_rate, self.beta1, self.beta2, self.epsilon = learning_rate, beta1, beta2, epsilon
        self.mean = [np.zeros_like(p.data) for p in params.values()]
        self.variance = [np.zeros_like(p.data) for p in params.values()]

    def update(self, index, parameter, rescale, step):
        # The bias-corrected step size folds both corrections into one factor.
        step_size = np.float32(self.learning_rate * np.sqrt(1.0 - self.beta2 ** step)
                               / (1.0 - self.beta1 ** step))
        b1, b2 = np.float32(self.beta1), np.float32(self.beta2)
        g = rescale * parameter.grad
        mean, variance = self.mean[index], self.variance[index]
        mean[...] = b1 * mean + (np.float32(1) - b1) * g
        variance[...] = b2 * variance + (np.float32(1) - b2) * g * g
        parameter.data -= step_size * mean / (np.sqrt(variance) + np.float32(self.epsilon))

    def state(self):
        return self.mean + self.variance


DEFAULT_LEARNING_RATES = {"sgd": 0.05, "adam": 0.002}


def make_optimizer(name, params, learning_rate):
    if name == "sgd":
        return SGD(params, learning_rate)
    if name == "adam":
        return Adam(params, learning_rate)
    raise ValueError(f"--optimizer: expected sgd or adam, got {name!r}")


class Trainer:
    """Applies the optimizer to every parameter; counts the updates (Adam's step)."""

    def __init__(self, params, optimizer):
        self.params, self.optimizer, self.steps_taken = params, optimizer, 0

    def step(self, batch_size):
        self.apply_updates(batch_size)

    def apply_updates(self, batch_size):
        if batch_size < 1:
            raise ValueError(f"Trainer.step: batch_size must be >= 1, got {batch_size}")
        self.steps_taken += 1
        rescale = np.float32(1.0 / batch_size)
        for index, parameter in enumerate(self.params.values()):
            self.optimizer.update(index, parameter, rescale, self.steps_taken)


class DistributedTrainer(Trainer):
    def __init__(self, params, optimizer):
        super().__init__(params, optimizer)
        self.pending = []  # one handle per gradient submitted since the last step
        self.seconds_waiting = 0.0

    def attach(self, net):
        net.gradient_ready_hook = self.submit_gradient

    def submit_gradient(self, parameter):
        # In place: the gradient is not touched again until step() has waited for it.
        self.pending.append(hvdc.allreduce_async_(parameter.grad, name=f"grad.{parameter.name}",
                                                  op=hvdc.Average))

    def step(self, batch_size):
        """batch_size: the per-rank batch size of the run, the same on every rank even for a
        short last batch; ranks that divided the same average by different numbers would drift."""
        if len(self.pending) != len(self.params):
            raise RuntimeError(f"DistributedTrainer.step: {len(self.pending)} of "
                               f"{len(self.params)} gradients were submitted; was attach(net) "
                               "called before backward?")
        waiting, self.pending = self.pending, []
        start = time.monotonic()
        for handle in waiting:
            hvdc.synchronize(handle)
        self.seconds_waiting += time.monotonic() - start
        self.apply_updates(batch_size)


def broadcast_optimizer_state(optimizer, root_rank):
    """The optimizer's state tensors, in place, from root_rank: one async broadcast each."""
    handles = [hvdc.broadcast_async_(tensor, root_rank, name=f"optimizer.state.{i}")
               for i, tensor in enumerate(optimizer.state())]
    for handle in handles:
        hvdc.synchronize(handle)
