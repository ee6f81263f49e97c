"""A small Gluon-like framework in numpy: named parameters, blocks with forward and backward, a
Sequential that reports each gradient as soon as it is final, softmax cross-entropy, and the MLP
and CNN of the C++ trainer. No hvdc here: optimizers.py is where the framework meets hvdc.

Gradients are sums over the batch (Gluon's convention); the trainer divides by the batch size.
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


class Parameter:
    def __init__(self, name, shape):
        self.name = name
        self.data = np.zeros(shape, np.float32)
        self.grad = np.zeros(shape, np.float32)


class ParameterDict(dict):
    """Parameters by name, in creation order (the order of optimizer state and checkpoints)."""

    def add(self, name, shape):
        if name in self:
            raise ValueError(f"ParameterDict: {name!r} exists already")
        self[name] = Parameter(name, shape)
        return self[name]

    def data(self):
        """{name: array}, as hvdc.broadcast_parameters takes it."""
        return {name: parameter.data for name, parameter in self.items()}


def xavier_uniform(parameter, fan_in, fan_out, rng):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    parameter.data[...] = rng.uniform(-limit, limit, parameter.data.shape)


class Block:
    parameters = ()

    def forward(self, x, training, rng):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError


class Dense(Block):
    def __init__(self, params, name, in_units, out_units, rng):
        self.weight = params.add(f"{name}_weight", (out_units, in_units))
        self.bias = params.add(f"{name}_bias", (out_units,))
        self.parameters = (self.weight, self.bias)
        xavier_uniform(self.weight, in_units, out_units, rng)

    def forward(self, x, training, rng):
        self.input = x
        return x @ self.weight.data.T + self.bias.data

    def backward(self, grad):
        self.weight.grad[...] = grad.T @ self.input
        self.bias.grad[...] = grad.sum(axis=0)
        return grad @ self.weight.data


class ReLU(Block):
    def forward(self, x, training, rng):
        self.positive = x > 0
        return x * self.positive

    def backward(self, grad):
        return grad * self.positive


class Dropout(Block):
    """Inverted dropout: kept units are scaled by 1 / (1 - rate) in training, so inference is the
    identity."""

    def __init__(self, rate):
        self.rate = rate

    def forward(self, x, training, rng):
        if not training or self.rate == 0:
            self.mask = None
            return x
        keep = rng.random(x.shape) >= self.rate
        self.mask = keep.astype(np.float32) / np.float32(1.0 - self.rate)
        return x * self.mask

    def backward(self, grad):
        return grad if self.mask is None else grad * self.mask


class Flatten(Block):
    def forward(self, x, training, rng):
        self.shape = x.shape
        return x.reshape(len(x), -1)

    def backward(self, grad):
        return grad.reshape(self.shape)


class Conv2D(Block):
    """Square kernel, stride 1, zero padding. im2col: every output pixel's receptive field becomes
    one row of a matrix, so the convolution is one matrix product."""

    def __init__(self, params, name, channels, filters, kernel, padding, rng):
        self.weight = params.add(f"{name}_weight", (filters, channels, kernel, kernel))
        self.bias = params.add(f"{name}_bias", (filters,))
        self.parameters = (self.weight, self.bias)
        self.kernel, self.padding = kernel, padding
        xavier_uniform(self.weight, channels * kernel * kernel, filters * kernel * kernel, rng)

    def forward(self, x, training, rng):
        p, k = self.padding, self.kernel
        padded = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
        windows = sliding_window_view(padded, (k, k), axis=(2, 3))  # [n, c, oh, ow, k, k]
        n, c, out_h, out_w = windows.shape[:4]
        self.input_shape, self.padded_shape = x.shape, padded.shape
        self.columns = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * out_h * out_w, c * k * k)
        out = self.columns @ self.weight.data.reshape(len(self.bias.data), -1).T + self.bias.data
        return out.reshape(n, out_h, out_w, -1).transpose(0, 3, 1, 2)

    def backward(self, grad):
        n, filters, out_h, out_w = grad.shape
        rows = grad.transpose(0, 2, 3, 1).reshape(-1, filters)
        self.weight.grad[...] = (rows.T @ self.columns).reshape(self.weight.data.shape)
        self.bias.grad[...] = rows.sum(axis=0)
        k, c = self.kernel, self.input_shape[1]
        columns = (rows @ self.weight.data.reshape(filters, -1)).reshape(n, out_h, out_w, c, k, k)
        # col2im: each kernel offset adds its slice of the columns back onto the padded input.
        padded = np.zeros(self.padded_shape, grad.dtype)
        for i in range(k):
            for j in range(k):
                padded[:, :, i:i + out_h, j:j + out_w] += columns[..., i, j].transpose(0, 3, 1, 2)
        p = self.padding
        return padded[:, :, p:p + self.input_shape[2], p:p + self.input_shape[3]]


class MaxPool2D(Block):
    """Non-overlapping size x size windows (a trailing row or column that does not fill one is
    dropped); the gradient goes to the first maximum of each window."""

    def __init__(self, size):
        self.size = size

    def forward(self, x, training, rng):
        s = self.size
        n, c, h, w = x.shape
        self.input_shape = x.shape
        tiles = x[:, :, :h // s * s, :w // s * s].reshape(n, c, h // s, s, w // s, s)
        tiles = tiles.transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // s, w // s, s * s)
        self.winner = tiles.argmax(axis=-1)
        return np.take_along_axis(tiles, self.winner[..., None], axis=-1)[..., 0]

    def backward(self, grad):
        s = self.size
        n, c, out_h, out_w = grad.shape
        tiles = np.zeros((n, c, out_h, out_w, s * s), grad.dtype)
        np.put_along_axis(tiles, self.winner[..., None], grad[..., None], axis=-1)
        tiles = tiles.reshape(n, c, out_h, out_w, s, s).transpose(0, 1, 2, 4, 3, 5)
        result = np.zeros(self.input_shape, grad.dtype)
        result[:, :, :out_h * s, :out_w * s] = tiles.reshape(n, c, out_h * s, out_w * s)
        return result


class Sequential(Block):
    def __init__(self, blocks):
        self.blocks = blocks
        self.parameters = tuple(p for block in blocks for p in block.parameters)
        self.gradient_ready_hook = None

    def forward(self, x, training=False, rng=None):
        for block in self.blocks:
            x = block.forward(x, training, rng)
        return x

    def backward(self, grad):
        for block in reversed(self.blocks):
            grad = block.backward(grad)
            # A block's parameter gradients are final once its backward returns: hand them on at
            # once, so their communication overlaps the backward of the blocks before it.
            if self.gradient_ready_hook is not None:
                for parameter in block.parameters:
                    self.gradient_ready_hook(parameter)
        return grad


class SoftmaxCrossEntropy:
    def forward(self, logits, labels):
        """Per-sample losses; keeps what backward and predictions need."""
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        self.probabilities = np.exp(log_probabilities)
        self.labels, self.dtype = labels, logits.dtype
        return -log_probabilities[np.arange(len(labels)), labels]

    def backward(self):
        """d(sum of losses)/d(logits): softmax minus the one-hot label."""
        grad = self.probabilities.copy()
        grad[np.arange(len(self.labels)), self.labels] -= 1.0
        return grad.astype(self.dtype)

    def predictions(self):
        return self.probabilities.argmax(axis=1)


HIDDEN_UNITS = 128


def build_model(kind, image_shape, classes, dropout, init_seed):
    """The C++ trainer's two networks. Returns (network, parameters)."""
    params, rng = ParameterDict(), np.random.default_rng(init_seed)
    channels, height, width = image_shape
    if kind == "mlp":
        blocks = [Flatten(), Dense(params, "dense0", channels * height * width, HIDDEN_UNITS, rng),
                  ReLU(), Dropout(dropout), Dense(params, "dense1", HIDDEN_UNITS, classes, rng)]
        return Sequential(blocks), params
    if kind != "cnn":
        raise ValueError(f"--model: expected mlp or cnn, got {kind!r}")
    blocks = []
    for i, filters in enumerate((16, 32)):
        blocks += [Conv2D(params, f"conv{i}", channels, filters, 3, 1, rng), ReLU(), MaxPool2D(2)]
        channels, height, width = filters, height // 2, width // 2
    if height < 1 or width < 1:
        raise ValueError("--model cnn: images are too small")
    blocks += [Flatten(), Dropout(dropout),
               Dense(params, "dense0", channels * height * width, classes, rng)]
    return Sequential(blocks), params
