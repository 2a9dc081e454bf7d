"""Make ``python_endpoints/jobs/assets/voice_encoder.onnx``, the speaker-embedding model of
DIARIZE, from Resemblyzer's wheel — without PyTorch (docs/diarization.md).

Resemblyzer 0.1.4 (Apache-2.0) ships its GE2E voice encoder as ``resemblyzer/pretrained.pt``:
a PyTorch file of the legacy format (before zip archives). Its tensors are read here with
``pickle`` alone — the object pickle names each tensor's storage by key, and the storages
follow as raw little-endian arrays —, and written as an ONNX graph: three LSTM layers of 256,
a linear layer to 256, ReLU, and an L2 norm. Input ``mels`` ``[batch, frames, 40]``, output
``embedding`` ``[batch, 256]``.

Run once, when the model changes (``onnx`` is needed to write the graph; the app only reads
it, with ONNX Runtime):

    pip download --no-deps Resemblyzer==0.1.4 -d wheels
    uv run --with onnx python packaging/voice_encoder.py wheels/Resemblyzer-0.1.4-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import io
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "python_endpoints/jobs/assets/voice_encoder.onnx"
#: The legacy format's first pickle, and its protocol version.
MAGIC, PROTOCOL = 0x1950A86A20F9469CFC6C, 1001
DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "LongStorage": np.int64}
HIDDEN, MELS, LAYERS = 256, 40, 3


class _Storage:
    """A storage named by the object pickle, filled once the raw arrays are read."""

    def __init__(self, dtype: type) -> None:
        self.dtype = dtype
        self.array: np.ndarray | None = None


def _tensor(storage: _Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
            *_: Any) -> tuple[_Storage, int, tuple[int, ...], tuple[int, ...]]:  # fmt: skip
    return storage, offset, size, stride


def read_legacy(raw: bytes) -> dict[str, np.ndarray]:
    """The tensors of a legacy PyTorch file's state dict, by name."""
    f = io.BytesIO(raw)
    if pickle.load(f) != MAGIC or pickle.load(f) != PROTOCOL:
        raise ValueError("not a PyTorch file of the legacy format")
    pickle.load(f)  # the system it was written on
    storages: dict[str, _Storage] = {}

    class Reader(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
                return _tensor
            if module == "torch" and name in DTYPES:
                return DTYPES[name]
            if (module, name) == ("collections", "OrderedDict"):
                return collections.OrderedDict
            raise pickle.UnpicklingError(f"unexpected {module}.{name}")

        def persistent_load(self, pid: Any) -> _Storage:
            kind, dtype, key, _location, _count, view = pid
            if kind != "storage" or view is not None:
                raise pickle.UnpicklingError(f"unexpected storage {pid!r}")
            return storages.setdefault(key, _Storage(dtype))

    state = Reader(f).load()
    for key in pickle.load(f):
        storage = storages[key]
        (count,) = struct.unpack("<q", f.read(8))
        width = np.dtype(storage.dtype).itemsize
        storage.array = np.frombuffer(f.read(count * width), dtype=storage.dtype)
    model = state["model_state"] if "model_state" in state else state
    out = {}
    for name, (storage, offset, size, stride) in model.items():
        assert storage.array is not None
        width = storage.array.itemsize
        out[name] = np.lib.stride_tricks.as_strided(
            storage.array[offset:], shape=size, strides=[s * width for s in stride]
        ).copy()
    return out


def _gates(w: np.ndarray) -> np.ndarray:
    """PyTorch's LSTM gates (input, forget, cell, output) in ONNX's order (input, output,
    forget, cell)."""
    i, f, g, o = np.split(w, 4, axis=0)
    return np.concatenate([i, o, f, g], axis=0)


def onnx_model(weights: dict[str, np.ndarray]) -> Any:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    init, nodes = [], []

    def constant(name: str, value: np.ndarray) -> str:
        init.append(numpy_helper.from_array(value, name))
        return name

    nodes.append(helper.make_node("Transpose", ["mels"], ["x0"], perm=[1, 0, 2]))
    x = "x0"
    for n in range(LAYERS):
        w = constant(f"W{n}", _gates(weights[f"lstm.weight_ih_l{n}"])[None].astype(np.float32))
        r = constant(f"R{n}", _gates(weights[f"lstm.weight_hh_l{n}"])[None].astype(np.float32))
        bias = [_gates(weights[f"lstm.bias_{k}_l{n}"]) for k in ("ih", "hh")]
        b = constant(f"B{n}", np.concatenate(bias)[None].astype(np.float32))
        nodes.append(helper.make_node("LSTM", [x, w, r, b], [f"Y{n}", f"H{n}"], hidden_size=HIDDEN))
        if n < LAYERS - 1:  # [T, 1, B, H] -> [T, B, H]
            axis = constant(f"axis{n}", np.array([1], np.int64))
            nodes.append(helper.make_node("Squeeze", [f"Y{n}", axis], [f"x{n + 1}"]))
            x = f"x{n + 1}"
    last = constant("axis_last", np.array([0], np.int64))
    nodes.append(helper.make_node("Squeeze", [f"H{LAYERS - 1}", last], ["hidden"]))
    lw = constant("linear_w", weights["linear.weight"].astype(np.float32))
    lb = constant("linear_b", weights["linear.bias"].astype(np.float32))
    nodes.append(helper.make_node("Gemm", ["hidden", lw, lb], ["linear"], transB=1))
    nodes.append(helper.make_node("Relu", ["linear"], ["relu"]))
    nodes.append(helper.make_node("ReduceL2", ["relu"], ["norm"], axes=[1], keepdims=1))
    nodes.append(helper.make_node("Div", ["relu", "norm"], ["embedding"]))
    graph = helper.make_graph(
        nodes,
        "voice_encoder",
        [helper.make_tensor_value_info("mels", TensorProto.FLOAT, ["batch", "frames", MELS])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", HIDDEN])],
        init,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="fredica"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="Resemblyzer-0.1.4-py3-none-any.whl")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    import onnx

    raw = zipfile.ZipFile(args.wheel).read("resemblyzer/pretrained.pt")
    onnx.save(onnx_model(read_legacy(raw)), str(args.out))
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"{args.out}: {args.out.stat().st_size} bytes, sha256 {digest}")


if __name__ == "__main__":
    main()
