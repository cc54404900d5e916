"""The model a run trains, its sizes and its memory, from the one preset
table (common/plan/presets.def, which the C library compiles in) or from a
model file (docs/models.md), so run_all, the dry run and the report see the
shapes the binaries run.

Sizes as training communicates them (docs/models.md), for a job of t-way
tensor, p-way pipeline parallelism at `es` bytes an element:
  TP call   b*s*h*es bytes, four a layer (two forward, two backward)
  DP        params/(t*p)*es bytes of gradients per rank and step
  PP        b*s*h*es bytes per micro-batch per stage boundary
"""
import os
import re

from suite import paths

DEF_FILE = paths.script(os.path.join("common", "plan", "presets.def"))
FIELDS = ("hidden", "layers", "heads", "kv_heads", "ffn", "mlp", "seq", "vocab", "tied", "nominal",
          "experts", "top_k")
PRESET_LINE = re.compile(r'^PB_PRESET\("([\w.-]+)", (\d+), (\d+), (\d+), (\d+), (\d+), (GELU|SWIGLU), (\d+), (\d+), '
                         r'([01]), ([0-9.e]+), (\d+), (\d+)\)$', re.M)

# The models people train now, largest first: the default on GPUs is the first that fits.
TRAINED_NOW = ("llama3-405b", "llama3-70b", "llama3-8b")
CPU_MODEL = "tiny-gqa"  # the LLaMA form (grouped KV heads, SwiGLU) at a size 2 cores run in seconds

# GPU kinds a dry run can assume (--gpu): memory in bytes and the dense bf16 peak
# (vendor data sheets; an expectation, not a measurement).
GPUS = {  # memory as nvidia-smi reports it (MiB)
    "h100": {"memory": 81559 * 1048576.0, "bf16_tflops": 989.0},
    "h200": {"memory": 143771 * 1048576.0, "bf16_tflops": 989.0},
    "a100": {"memory": 81920 * 1048576.0, "bf16_tflops": 312.0},
}

# The layers of the model one stage runs: the rest of the stage is extrapolated
# from them. Bounds the time whatever the model; the shapes stay whole.
LAYER_CAP = {"quick": 1, "default": 2, "full": 4}


def presets():
    """name -> model dict, in the table's order."""
    with open(DEF_FILE) as f:
        text = f.read()
    out = {}
    for m in PRESET_LINE.finditer(text):
        name, vals = m.group(1), m.groups()[1:]
        model = {k: (v.lower() if k == "mlp" else float(v) if k == "nominal" else int(v)) for k, v in zip(FIELDS, vals)}
        out[name] = dict(model, name=name, micro_batch=1)
    return out


def load_file(path):
    """A model file: `key value` lines (`key = value` too), '#' comments; the C
    reader (pb_presets_load_file) refuses what this one refuses. Returns the
    model dict, or raises ValueError naming FILE:LINE."""
    m = {"name": "custom", "mlp": "gelu", "tied": 1, "micro_batch": 1, "nominal": 0.0, "vocab": 0, "experts": 0,
         "top_k": 0, "file": path}  # file: how a binary is given this model (--model-file)
    # Each integer key's accepted range, as the binaries' reader (common/plan/presets.c) has it.
    ints = {"hidden": (1, 1 << 20), "layers": (1, 100000), "heads": (1, 1 << 16), "kv_heads": (1, 1 << 16),
            "ffn": (1, 1 << 24), "seq": (1, 1 << 24), "vocab": (0, 1 << 32), "tied": (0, 1),
            "micro_batch": (1, 1 << 20), "experts": (0, 1 << 16), "top_k": (0, 1 << 16)}
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = re.split(r"\s*=\s*|\s+", line, maxsplit=1)
            key, value = parts[0], (parts[1] if len(parts) > 1 else "").strip()
            if key in ints:
                lo, hi = ints[key]
                if not re.fullmatch(r"[0-9]+", value) or not lo <= int(value) <= hi:
                    raise ValueError(f"{path}:{n}: {key} '{value}' is out of range; expected an integer in [{lo}, {hi}]")
                m[key] = int(value)
            elif key == "mlp" and value in ("gelu", "swiglu"):
                m[key] = value
            elif key == "params":
                m["nominal"] = float(value)
            elif key == "name" and re.fullmatch(r"[\w.-]{1,63}", value):
                m[key] = value
            else:
                raise ValueError(f"{path}:{n}: '{line}' is not accepted; keys: name, hidden, layers, heads, kv_heads, "
                                 "ffn, mlp, seq, vocab, tied, micro_batch, params, experts, top_k")
    for key in ("hidden", "layers", "heads", "seq"):
        if key not in m:
            raise ValueError(f"{path}: key '{key}' is required")
    m.setdefault("kv_heads", m["heads"])
    m.setdefault("ffn", 4 * m["hidden"])
    if m["hidden"] % m["heads"] or m["heads"] % m["kv_heads"]:
        raise ValueError(f"{path}: heads must divide hidden and kv_heads must divide heads")
    if (m["experts"] > 0) != (m["top_k"] > 0):
        raise ValueError(f"{path}: experts and top_k go together (an MoE model sets both, a dense one neither)")
    if m["top_k"] > m["experts"]:
        raise ValueError(f"{path}: top_k {m['top_k']} is more than the {m['experts']} experts; "
                         "expected 1 <= top_k <= experts")
    return m


def resolve(name="", model_file=""):
    """The model of a run: a model file, else a preset by name."""
    if model_file:
        return load_file(model_file)
    table = presets()
    if name not in table:
        raise ValueError(f"unknown model '{name}'; accepted: {', '.join(table)}")
    return table[name]


def layer_params(m):
    """core/flops.h: Q and O h*h, K and V h*kv each, two or (SwiGLU) three MLP matrices."""
    h, kv = m["hidden"], m["kv_heads"] * m["hidden"] // m["heads"]
    return 2 * h * h + 2 * h * kv + (3 if m["mlp"] == "swiglu" else 2) * h * m["ffn"]


def params(m):
    """Counted from the shape (the planner's pb_presets_params)."""
    return m["layers"] * layer_params(m) + (1 if m["tied"] else 2) * m["vocab"] * m["hidden"]


def layer_flops(m, seq=None):
    """Forward + backward FLOPs of one layer for one micro-batch, scores included (core/flops.h)."""
    s, b = seq or m["seq"], m["micro_batch"]
    return 3 * (2 * b * s * layer_params(m) + 4 * b * s * s * m["hidden"])


def io_bytes(m, es):
    """One b x s x h tensor, a layer's input or output (compute/layer.h pb_layer_io_bytes)."""
    return m["micro_batch"] * m["seq"] * m["hidden"] * es


def sizes(m, t, p, es):
    """Bytes training communicates at (t, p): one TP call, a rank's gradients, one PP message."""
    act = io_bytes(m, es)
    return {"tp_call": act, "grad_per_rank": params(m) * es // (t * p), "pp_message": act}


# compute/layer.h's recomputation, least first: run_all takes the first whose step fits the GPU.
RECOMPUTE = ("none", "selective", "full")


def act_slots(m, t, es):
    """compute/layer.c's activation slots of one layer and micro-batch, in its order: the
    attention's input, QKV, the scores, O, the MLP's input and its Z."""
    n, h, s, b = m["micro_batch"] * m["seq"], m["hidden"], m["seq"], m["micro_batch"]
    qkv = (h + 2 * m["kv_heads"] * h // m["heads"]) // t
    up = (2 if m["mlp"] == "swiglu" else 1) * m["ffn"] // t
    return [es * n * h, es * n * qkv, es * b * (m["heads"] // t) * s * s, es * n * h // t, es * n * h, es * n * up]


def kept(rc, k):
    """Whether recomputation `rc` keeps slot k for each micro-batch (pb_layer_impl_slot_kept):
    full only the layer's input, selective all but the scores."""
    return k == 0 if rc == "full" else rc != "selective" or k != 2


def layer_act_bytes(m, t, es, rc="none"):
    """What one layer keeps for one micro-batch under recomputation `rc`."""
    return sum(v for k, v in enumerate(act_slots(m, t, es)) if kept(rc, k))


def scratch_bytes(m, t, es, rc="none"):
    """A layer stack's scratch (compute/layer_stack.c): the MLP's or QKV's widest tensor, dO, the
    scores' gradient of one KV head's query heads, three tensors between layers, the slots not kept (one set the
    layers share) and, with full recomputation, the replayed output."""
    n, h, s = m["micro_batch"] * m["seq"], m["hidden"], m["seq"]
    slots = act_slots(m, t, es)
    up = (2 if m["mlp"] == "swiglu" else 1) * m["ffn"] // t
    qkv = (h + 2 * m["kv_heads"] * h // m["heads"]) // t
    fixed = es * (n * max(up, qkv) + n * h // t + (m["heads"] // m["kv_heads"]) * s * s + 3 * n * h)
    shared = sum(v for k, v in enumerate(slots) if not kept(rc, k))
    return fixed + shared + (es * n * h if rc == "full" else 0)


def run_memory(m, t, layers, in_flight, grad_bytes, es, rc="none"):
    """Bytes one GPU of the run holds at most: the weights and gradients of the
    layers it runs, their activations for the micro-batches in flight under
    recomputation `rc`, the stack's scratch, and the DP gradient buffer. Parts,
    and the total."""
    per_layer = layer_params(m) // t * es
    parts = {"weights": layers * per_layer, "gradients": layers * per_layer,
             "activations": in_flight * layers * layer_act_bytes(m, t, es, rc),
             "scratch": scratch_bytes(m, t, es, rc), "dp_buffer": grad_bytes}
    parts["total"] = sum(parts.values())
    return parts


def fits_training(m, t, p, memory):
    """The planner's fit rule for the default model: mixed-precision Adam's 16
    bytes a parameter over t*p GPUs within 80% of the GPU's memory (the rest:
    activations with recomputation, NCCL's buffers)."""
    return 16 * params(m) / (t * p) <= 0.8 * memory


def default_model(gpus, memory, tp, pp):
    """CPU_MODEL on CPUs; with GPUs the largest model trained now whose
    training state fits at the (t, p) the run's shapes choose."""
    if not gpus:
        return CPU_MODEL
    table = presets()
    for name in TRAINED_NOW:
        if fits_training(table[name], tp, pp, memory):
            return name
    return TRAINED_NOW[-1]


def describe(m):
    kv = "" if m["kv_heads"] == m["heads"] else f", {m['kv_heads']} KV heads"
    return (f"{m['name']}: h {m['hidden']}, {m['layers']} layers, {m['heads']} heads{kv}, {m['mlp']} MLP of "
            f"{m['ffn']}, s {m['seq']}, vocab {m['vocab']}, {count(params(m))} parameters")


def count(n):
    return f"{n / 1e9:.2f}e9" if n >= 1e9 else f"{n / 1e6:.2f}e6"
