"""The shape of every workload step at any scale, Megatron-style.

One function, shapes(), says for a world of N ranks, R per node, what each
workload step runs: tensor parallelism inside a node, pipeline stages across
nodes, data parallelism over the rest. Each step gets the arguments to add to
its command line and a sentence saying what they mean, or a skip with its
reason: a step is never launched with arguments the binary would refuse
(tests/integration/test_shapes.sh runs every answer through the binaries'
--validate).

How the binaries place ranks (ranks are numbered node by node, as mpirun's
default by-slot mapping and srun's block distribution number them):
- tp_layer --tp T: groups of T consecutive ranks, all groups at once; T
  dividing every node's rank count keeps each group inside one node.
- pp_pipeline --stages P --pp-stride S: in each block of S*P ranks, pipeline
  j holds ranks j, j+S, ..., j+(P-1)S; with S = R, stage k is on node k and
  R pipelines run side by side (rail-aligned).
- hybrid_3d --placement tp-inner: grid position t + T*(p + P*d) takes the
  i-th rank in node order, so TP fills a node, stages follow on the next nodes.

The sizes come from the run's model (suite/models.py), never shrunk: tp_layer
runs the model's own layer at s/2, s and 2s; dp_allreduce all-reduces a
rank's real gradient at the job's (t, p), and a half and a quarter of it;
pp_pipeline sends the model's activation between stages with the
micro-batches the global batch gives each pipeline; a stage runs at most
models.LAYER_CAP[profile] of its layers, and the steps say so.
"""

import math
import os
import re

from suite import models

TP_MAX = 8  # an NVLink domain: the GPUs of one node
PP_MAX_NODES = 8  # stages across nodes
PP_MAX_ONE_NODE = 4  # stages on a single node
MB_CAP = 32  # micro-batches a pipeline runs at most: its step time grows with them (efficiency is near m/(m+p-1) by 32)
GRAD_MAX = 64 << 30  # the largest --grad-bytes dp_allreduce accepts (PB_SIZE_MAX)
DOES_NOT_FIT = "does not fit"  # how a memory skip begins: run_all ends such a run with exit 3
MEMORY_USE = 0.9  # of a GPU's memory a step may plan to hold (the rest: the CUDA context, NCCL's buffers)

# The shaped steps, by the roles suite/manifest.py gives them (it names the steps; this module never does).
INTRA, DP, TP, PP, GRID, FSDP, CP, EP = ("collectives inside each node", "data parallel", "tensor parallel",
                                         "pipeline parallel", "3D parallel", "sharded data parallel", "context parallel",
                                         "expert parallel")
ROLES = (INTRA, DP, TP, PP, GRID, FSDP, CP, EP)
# The MoE model moe_layer runs when the run's own model is dense: on GPUs one whose 64 experts spread
# over a node and over 8 nodes (EP inside and across nodes), on CPUs one 2 cores run in seconds.
MOE_MODEL_GPU, MOE_MODEL_CPU = "olmoe-1b-7b", "tiny-moe"
MOE_SKEWS = "uniform,2"  # the router's load: even, and the most loaded expert at twice the mean
CP_MAX = 8  # a CP ring inside a node: the GPUs of one
CP_CHECK_BUDGET = 2 ** 33  # row-key-dim products of cp_attention's -c 1 reference a rank (PB_CP_CHECK_BUDGET)
FSDP_MIN_LAYERS = 2  # prefetch overlaps a layer's compute with the next layer's gather: one layer has no next


def model_of(model):
    """The model a step runs: a model dict (suite/models.py) or a preset name."""
    return model if isinstance(model, dict) else models.resolve(model)


def node_sizes(ranks, ranks_per_node):
    """Ranks of every node, in order: R each, the last holding what is left."""
    full, rest = divmod(ranks, ranks_per_node)
    return [ranks_per_node] * full + ([rest] if rest else [])


def _tp_size(sizes, m, seq, cap):
    """The largest t <= cap dividing every node's rank count, the heads and KV
    heads (a rank holds whole ones), the MLP width and seq (sequence
    parallelism shards it; None: not run)."""
    for t in range(min(cap, min(sizes)), 0, -1):
        if all(n % t == 0 for n in sizes) and m["heads"] % t == 0 and m["kv_heads"] % t == 0 and \
                m["ffn"] % t == 0 and (seq is None or seq % t == 0):
            return t
    return 1


def _largest_divisor(n, cap, at_least=2):
    for d in range(min(n, cap), at_least - 1, -1):
        if n % d == 0:
            return d
    return 0


def _n(count, word):
    return "%d %s%s" % (count, word, "" if count == 1 else "s")


def _round_up(n, k):
    return (n + k - 1) // k * k


def _progression_class(first, stride, k, rpn):
    """Link class of the group first, first + stride, ... (k ranks), rank r on
    node r // rpn: intra when the first and last share a node; inter when
    every gap crosses a node boundary (always when stride >= rpn; otherwise a
    gap crosses at most one, so the nodes spanned must number k)."""
    last = first + (k - 1) * stride
    if first // rpn == last // rpn:
        return "intra"
    return "inter" if stride >= rpn or last // rpn - first // rpn == k - 1 else "mixed"


def _links(bases, step, n, stride, k, rpn):
    """The class of every group, starting at b + step * j (b in bases, j < n),
    of k ranks stride apart (core/world.c's link classes; mixed when the groups
    differ). A group's class depends only on its start modulo rpn, and step * j
    modulo rpn repeats every rpn / gcd(step, rpn) groups: the work is bounded
    by the ranks of a node, not of the world."""
    classes = set()
    for j in range(min(n, rpn // math.gcd(step, rpn))):
        for b in bases:
            classes.add(_progression_class(b + step * j, stride, k, rpn))
            if len(classes) > 1:
                return "mixed"
    return classes.pop()


def hybrid_links(ranks, ranks_per_node, T, P, D):
    """Link class of the TP, PP and DP groups under hybrid_3d's tp-inner placement."""
    # position t + T*(p + P*d) is the rank numbered so (ranks are already in node order):
    # TP groups start at T*q (stride 1), PP groups at t + T*P*d (stride T), DP groups at
    # t + T*p, i.e. 0 .. T*P - 1 (stride T*P).
    rpn = ranks_per_node
    if ranks <= rpn:  # one node: every group is inside it
        return tuple("intra" if n > 1 else "none" for n in (T, P, D))
    tp = _links([0], T, P * D, 1, T, rpn) if T > 1 else "none"
    pp = _links(range(T), T * P, D, T, P, rpn) if P > 1 else "none"
    dp = _links([0], 1, T * P, T * P, D, rpn) if D > 1 else "none"
    return tp, pp, dp


def _shape(role, args, describe, note=None, sizes=None):
    return {"role": role, "args": [str(a) for a in args], "describe": describe, "skip": None, "note": note,
            "sizes": sizes or {}}


def _skip(role, reason):
    return {"role": role, "args": None, "describe": "skipped: " + reason, "skip": reason, "note": None, "sizes": {}}


def _mib(n):
    return "%.1f MiB" % (n / 1048576.0) if n < 1 << 30 else "%.2f GiB" % (n / 1073741824.0)


def _too_big(need, memory, what):
    """Why `need` bytes do not fit a GPU of `memory` (0: unknown, not checked), or ""."""
    if not memory or need <= MEMORY_USE * memory:
        return ""
    return DOES_NOT_FIT + ": %s needs %s a GPU, more than %d%% of its %s" % (what, _mib(need), 100 * MEMORY_USE,
                                                                        _mib(memory))


def _check_expected(beside, ref, rc, memory):
    """How a step's -c 1 is expected to validate against a reference of ref(rc) bytes run next to
    `beside` bytes (tp_layer's unsharded layers, pp_pipeline's chunk run again; the binaries decide
    from the memory they find): "kept" as configured (rc), "recomputing" (full), or "none"."""
    if not _too_big(beside + ref(rc), memory, ""):
        return "kept"
    return "recomputing" if not _too_big(beside + ref("full"), memory, "") else "none"


def _tp_check(m, t, seqs, cap_layers, es, rc, memory):
    """tp_layer's -c 1 at each sequence length, said where its unsharded layers (t 1, each point's
    activations twice, 8 full tensors: tp_layer.c's reference_bytes) do not fit as configured."""
    said = []
    for s in seqs:
        ms = dict(m, seq=s)
        full = models.io_bytes(ms, es)
        ref = lambda r: models.run_memory(ms, 1, cap_layers, 2, 0, es, r)["total"] + 8 * full  # noqa: E731
        how = _check_expected(tp_memory(ms, t, cap_layers, es, rc), ref, rc, memory)
        if how == "recomputing":
            said.append("s %d against the unsharded layers recomputing (as configured they need %s)" % (s, _mib(ref(rc))))
        elif how == "none":
            said.append("s %d NOT validated (the unsharded layers need %s even recomputing)" % (s, _mib(ref("full"))))
    return "; -c 1 expected to check %s" % ", ".join(said) if said else ""


def _pp_check(m, chunk_layers, stage_need, es, memory):
    """pp_pipeline's -c 1: each stage runs its chunk of `chunk_layers` again beside the stage
    (pp_check.c's pb_pp_reference_bytes: one micro-batch's activations, 4 tensors), said where
    it does not fit keeping every activation next to the stage. Its host copies are not on the
    GPU."""
    full = models.io_bytes(m, es)
    ref = lambda r: models.run_memory(m, 1, chunk_layers, 1, 0, es, r)["total"] + 4 * full  # noqa: E731
    how = _check_expected(stage_need, ref, "none", memory)
    if how == "recomputing":
        return "; -c 1 expected to check each stage's %s again recomputing (kept they need %s)" % (
            _n(chunk_layers, "layer"), _mib(ref("none")))
    if how == "none":
        return "; -c 1 expected NOT to validate: each stage's %s run again need %s even recomputing" % (
            _n(chunk_layers, "layer"), _mib(ref("full")))
    return ""


def _least_recompute(need, memory, kinds=models.RECOMPUTE):
    """The least recomputation of `kinds` whose need(rc) bytes fit the GPU, and those bytes; when
    none fits, the last (the skip then names its need): a step keeps the model's shape and layers,
    and trades time for memory as training does."""
    for rc in kinds:
        if not _too_big(need(rc), memory, ""):
            break
    return rc, need(rc)


def _recompute_args(rc):
    return [] if rc == "none" else ["--recompute", rc]


def _with(rc):
    """How a description names recomputation `rc` ("" for none)."""
    return "" if rc == "none" else " with %s recomputation" % rc


def micro_batches(m, d, profile_list):
    """The micro-batches a pipeline runs: the profile's list for the curve, and
    the global batch's share of each of the d pipelines (4M tokens, or the
    planner's own default for the CPU models), m = global / (d * b)."""
    tokens = 8 * m["seq"] if m["name"] in ("tiny", "tiny-gqa") else 4 << 20
    real = max(1, tokens // m["seq"] // (d * m["micro_batch"]))
    return sorted(set(profile_list) | {min(real, MB_CAP)}), real


def shapes(ranks, ranks_per_node, gpus, model, profile, es=4, pp_list=(1, 2, 4, 8), memory=0):
    """Every workload step's shape for `ranks` ranks, `ranks_per_node` per node
    (the last node may hold fewer), `gpus` GPUs per node (0 on CPUs), the
    `model` the steps run (a model dict of suite/models.py, or a preset name),
    the run_all `profile` (quick, default, full), `es` bytes an element (2:
    bf16 on GPUs) and the profile's micro-batch counts `pp_list`.

    Returns a list, in ROLES order, of dicts:
      role      the step's role (suite/manifest.py's name_shapes adds its name as "step")
      args      the arguments to add to the step's command line (strings), or None when skipped
      describe  one sentence: what runs where
      skip      None, or why the step cannot run on this world
      note      None, or what the binary cannot express here
      sizes     what crosses the wire and what a GPU holds: {name: bytes or count}

    With `memory` (a GPU's bytes; 0: not checked) a step whose GPU would hold
    more than 90% of it is skipped, the skip naming what does not fit.
    """
    if ranks < 1 or ranks_per_node < 1:
        raise ValueError("ranks and ranks_per_node must be positive")
    if profile not in models.LAYER_CAP:
        raise ValueError("unknown profile %r; known: %s" % (profile, ", ".join(models.LAYER_CAP)))
    rpn = min(ranks_per_node, ranks)
    full, rest = divmod(ranks, rpn)
    # The distinct node sizes (every node holds rpn, the last what is left): what is
    # asked of "every node" is asked of these, whatever the number of nodes.
    sizes = [rpn] + ([rest] if rest else [])
    nodes = full + (1 if rest else 0)
    uneven = bool(rest)
    m = model_of(model)
    cap_layers = min(models.LAYER_CAP[profile], m["layers"])
    cap = min(TP_MAX, gpus) if gpus else TP_MAX
    where = "%s on %s of %d" % (_n(ranks, "rank"), _n(nodes, "node"), rpn)
    if uneven:
        where += " (the last holds %d)" % rest
    out = []

    # The job's (t, p, d): TP inside the node, PP across nodes, DP over the rest (hybrid_3d runs it).
    T = _tp_size(sizes, m, None, cap)  # hybrid_3d's TP all-reduces: seq stays whole
    p_nodes = _largest_divisor(nodes, PP_MAX_NODES) if nodes > 1 and not uneven else 0
    P = p_nodes if p_nodes else 1
    D = ranks // (T * P)
    job = models.sizes(m, T, P, es)

    # coll_sweep's intra-node sweep: every node's collective at once.
    if nodes > 1 and min(sizes) >= 2:
        out.append(_shape(INTRA, ["--groups", "node"],
                          "every collective inside each of the %d nodes at once (%s)" % (nodes, where)))
    else:
        out.append(_skip(INTRA, "one node: coll_sweep is already intra-node" if nodes == 1
                         else "a node holds one rank: no collective inside a node"))

    # Data parallelism over every rank: a rank's real gradient at the job's (t, p), and a half and a quarter.
    g = job["grad_per_rank"] // es * es
    grads = sorted({max(es, g // 4 // es * es), max(es, g // 2 // es * es), g})
    dp_rc, dp_need = _least_recompute(lambda rc: dp_memory(m, cap_layers, g, es, rc), memory)
    why = _too_big(dp_need, memory, "the gradient buffer and %s%s" % (_n(cap_layers, "layer"), _with(dp_rc))) or \
        (DOES_NOT_FIT + ": a rank's gradient of %s is more than dp_allreduce's %s" % (_mib(g), _mib(GRAD_MAX))
         if g > GRAD_MAX else "")
    if why:
        out.append(_skip(DP, why))
    else:
        out.append(_shape(DP, ["--layers", cap_layers, "--grad-bytes", ",".join(map(str, grads)), *_recompute_args(dp_rc)],
                          "gradient all-reduce over all %s: %s a rank (params/(t*p) at t %d, p %d) and a half and "
                          "a quarter, during the backward of %s%s" % (where, _mib(g), T, P, _n(cap_layers, "layer"),
                                                                       _with(dp_rc)),
                          note="dp_allreduce all-reduces over the whole world; DP across nodes with TP inside "
                               "is hybrid_3d's DP axis",
                          sizes={"grad_bytes": g, "memory": dp_need}))

    # Tensor parallelism inside a node: the model's own layer at s/2, s and 2s.
    seqs = [m["seq"] // 2, m["seq"], 2 * m["seq"]]
    t = _tp_size(sizes, m, seqs[0], cap)
    longest = dict(m, seq=seqs[-1])  # the sweep's largest point holds the most
    tp_rc, tp_need = _least_recompute(lambda rc: tp_memory(longest, max(t, 1), cap_layers, es, rc),
                                      memory, models.RECOMPUTE[:2])  # TP's blocks replay no whole layer
    tp_sizes = {"tp_call": job["tp_call"], "memory": tp_need}
    tp_args = ["--layers", cap_layers, "--seq-list", ",".join(map(str, seqs)), *_recompute_args(tp_rc)]
    why = _too_big(tp_need, memory, "%s at TP %d%s" % (_n(cap_layers, "layer"), max(t, 1), _with(tp_rc)))
    if why:
        out.append(_skip(TP, why))
    elif ranks == 1:
        out.append(_shape(TP, ["--tp", 1, *tp_args], "one rank: the layer unsharded, no TP communication",
                          sizes=tp_sizes))
    elif rpn == 1:
        out.append(_skip(TP, "a node holds one rank: no TP group fits inside a node"))
    elif t == 1:
        out.append(_skip(TP, "no TP size from 2 to %d divides every node's ranks (%s), the %d heads, "
                         "the %d KV heads, the MLP width %d and seq %d" % (
                             min(cap, rpn), "/".join(map(str, sorted(set(sizes)))), m["heads"], m["kv_heads"],
                             m["ffn"], seqs[0])))
    else:
        out.append(_shape(TP, ["--tp", t, *tp_args],
                          "TP %d inside each node: %s of %d consecutive ranks at once (%s); %s a call at s %d, "
                          "%s run%s%s" % (t, _n(ranks // t, "group"), t, where, _mib(job["tp_call"]), m["seq"],
                                          _n(cap_layers, "layer"), _with(tp_rc),
                                          _tp_check(m, t, seqs, cap_layers, es, tp_rc, memory)), sizes=tp_sizes))

    # Pipeline stages across nodes: stage k on node k, R pipelines side by side.
    if ranks == 1:
        out.append(_shape(PP, ["--stages", 1, "--layers", cap_layers],
                          "one rank: one stage, no transfers"))
    else:
        if p_nodes:
            p, stride = p_nodes, ["--pp-stride", rpn]
            what = "%d stages, one per node (stage k of every pipeline on node k of its block of %d nodes)" % (p, p)
        else:
            # One node, or nodes of unequal size (no stride puts one stage per node):
            # pipelines inside each node.
            p, stride = _largest_divisor(math.gcd(*sizes), PP_MAX_ONE_NODE), []
            why = "one node" if nodes == 1 else "uneven nodes cannot hold one stage each" if uneven else \
                  "no stage count from 2 to %d divides the %d nodes" % (PP_MAX_NODES, nodes)
            what = "%d stages of consecutive ranks inside a node (%s)" % (p, why)
            if not p:
                out.append(_skip(PP, "%s and no stage count from 2 to %d divides every node's ranks (%s)"
                                 % (why, PP_MAX_ONE_NODE, "/".join(map(str, sorted(set(sizes)))))))
        if p:
            out.append(_pipeline(m, p, stride, what, ranks, where, job, cap_layers, es, pp_list, memory, D))

    out.append(_grid(m, T, P, D, ranks, rpn, where, cap_layers, es, memory))
    out.append(_fsdp(m, ranks, rpn, nodes, uneven, where, cap_layers, es, memory))
    out.append(_cp(m, ranks, sizes, where, cap_layers, es, memory))
    out.append(_moe(m, ranks, rpn, nodes, uneven, gpus, where, min(models.LAYER_CAP[profile], 2), es, memory))
    return out


def _grid(m, T, P, D, ranks, rpn, where, cap_layers, es, memory):
    """hybrid_3d: TP inside the node, PP across nodes, DP over the rest."""
    if T == 1 and P == 1:
        return _skip(GRID, "TP 1 x PP 1 (%s, %d heads): the grid is DP alone, which dp_allreduce "
                     "measures" % (where, m["heads"]))
    lt, lp, ld = hybrid_links(ranks, rpn, T, P, D)
    cap_layers = min(cap_layers, -(-m["layers"] // P))
    # 1F1B's P micro-batches in flight of its default 2P; TP's blocks replay no whole layer
    rc, hy_mem = _least_recompute(lambda rc: hybrid_memory(m, T, cap_layers, P, 2 * P, es, rc), memory,
                                  models.RECOMPUTE[:2])
    why = _too_big(hy_mem, memory, "%s of TP %d%s" % (_n(cap_layers, "layer"), T, _with(rc)))
    if why:
        return _skip(GRID, why)
    return _shape(GRID, ["--tp", T, "--pp", P, "--dp", D, "--layers", cap_layers * P, "--compare-placements",
                         *_recompute_args(rc)],
                  "TP %d x PP %d x DP %d, %s a stage of %d%s; tp-inner puts TP %s, PP %s, DP %s (%s)"
                  % (T, P, D, _n(cap_layers, "layer"), -(-m["layers"] // P), _with(rc), lt, lp, ld, where),
                  sizes={"memory": hy_mem})


def fsdp_memory(m, layers, n, es, rc="none"):
    """Bytes one rank of fsdp_step holds (pb_fsdp_bytes): the stack's full weights, gradients and
    activations of its layers (under recomputation rc) and scratch, two gathered layers, its
    shards of parameters and gradients, and 5 b x s x h tensors (its inputs and outputs)."""
    per_layer = models.layer_params(m) * es
    shard = -(-models.layer_params(m) // n) * es
    stack = models.run_memory(m, 1, layers, 1, 0, es, rc)["total"]
    return stack + 2 * per_layer + 2 * layers * shard + 5 * models.io_bytes(m, es)


def dp_memory(m, layers, g, es, rc="none"):
    """Bytes one rank of dp_allreduce holds (dp_step.c pb_dp_step_bytes): the stack, whose gradients
    live in the all-reduced buffer of g bytes when they fit in it, that buffer, and x, y and dy."""
    parts = models.run_memory(m, 1, layers, 1, g, es, rc)
    return parts["total"] - (parts["gradients"] if parts["gradients"] <= g else 0) + 3 * models.io_bytes(m, es)


def tp_memory(m, t, layers, es, rc="none"):
    """Bytes one rank of tp_layer's sharded layers holds (tp_layer.c, tp.c pb_tp_bytes): the stack with
    two micro-batches' activations, 2 whole tensors and 9 of its inputs and outputs (every row, as
    --tp-comm allreduce has them)."""
    return models.run_memory(m, t, layers, 2, 0, es, rc)["total"] + 11 * models.io_bytes(m, es)


def pp_stage_memory(m, layers, held, micro_batches, es, rc="none"):
    """Bytes one stage of pp_pipeline holds (pp_stack.c pb_pp_stack_bytes, pp.c pb_pp_exec_bytes): the
    stack with `held` micro-batches' activations, and the executor's buffers: a send slot for each
    micro-batch each way, and 7 more tensors."""
    stack = models.run_memory(m, 1, layers, held, 0, es, rc)["total"]
    return stack + (2 * micro_batches + 7) * models.io_bytes(m, es)


def hybrid_memory(m, T, layers, P, micro_batches, es, rc="none"):
    """Bytes one rank of hybrid_3d holds (hybrid.c pb_hybrid_bytes): the TP stack with 1F1B's P
    micro-batches in flight, 2 whole tensors and 3 of its inputs and outputs, and the pipeline's
    buffers for its micro-batches (2P by default)."""
    stack = models.run_memory(m, T, layers, P, 0, es, rc)["total"]
    return stack + (5 + 2 * micro_batches + 7) * models.io_bytes(m, es)


def _fsdp(m, ranks, rpn, nodes, uneven, where, cap_layers, es, memory):
    """fsdp_step: ZeRO-3 over the world on one node (or nodes of unequal size); on several
    equal nodes hybrid sharding, as FSDP is run at scale: shard inside each node, one replica
    per node. Whole layers (t 1), at least FSDP_MIN_LAYERS so that prefetch has a next layer."""
    if ranks == 1:
        return _skip(FSDP, "one rank: nothing to shard")
    layers = min(max(cap_layers, FSDP_MIN_LAYERS), m["layers"])
    hybrid = nodes > 1 and not uneven and rpn > 1
    n = rpn if hybrid else ranks
    rc, need = _least_recompute(lambda rc: fsdp_memory(m, layers, n, es, rc), memory)
    why = _too_big(need, memory, "%s unsharded with their two gathered layers%s" % (_n(layers, "layer"), _with(rc)))
    if why:
        return _skip(FSDP, why)
    gather = models.layer_params(m) * es
    what = ("hybrid sharding: each layer sharded over the %d ranks of its node, %d replicas across the nodes"
            % (n, nodes)) if hybrid else "each layer sharded over all %d ranks (ZeRO-3)" % n
    return _shape(FSDP, ["--shard-group", "node" if hybrid else "world", "--layers", layers, *_recompute_args(rc)],
                  "%s; %s a layer's all-gather, %s run%s, prefetch off and on (%s)"
                  % (what, _mib(gather), _n(layers, "layer"), _with(rc), where),
                  sizes={"fsdp_gather": gather, "memory": need})


def cp_memory(m, c, seq, es):
    """Bytes one rank of cp_attention holds (pb_cp_bytes): Q, O, dO, dQ of its block; its K/V block, two
    travelling, two accumulators and dK/dV; two blocks of scores; a row's running max and sum."""
    hd = m["hidden"] // m["heads"]
    rows = m["micro_batch"] * m["heads"] * (seq // c)
    q = rows * hd * es
    kv = 2 * m["micro_batch"] * (seq // c) * m["kv_heads"] * hd * es
    return 4 * q + 6 * kv + 2 * rows * (seq // c) * es + rows * 8


def cp_check_rows(m, c, seq):
    """Rows of each block a head that cp_attention -c 1 checks under --check-rows auto (pb_cp_check_rows):
    every one while the host reference stays within its budget, else as many as fit, at least 1."""
    per_row = m["micro_batch"] * m["heads"] * seq * (m["hidden"] // m["heads"])
    return max(1, min(seq // c, CP_CHECK_BUDGET // per_row))


def _cp_check(m, c, seq):
    """What -c 1 checks at this size, said only where it is not every row."""
    rows, n = seq // c, cp_check_rows(m, c, seq)
    if n == rows:
        return ""
    every = m["micro_batch"] * m["heads"] * seq * (m["hidden"] // m["heads"]) * rows
    return ("; -c 1 checks O and dQ of %d of each block's %d rows a head, not dK and dV (every row would take "
            "%.2g row-key-dim products a rank on the host)" % (n, rows, every))


def _cp(m, ranks, sizes, where, cap_layers, es, memory):
    """cp_attention: a ring of c ranks inside every node (c the largest up to CP_MAX dividing every node's
    ranks), over a sequence c times the model's, so that each rank holds a block of the model's own
    training length, as long-context training splits a longer sequence (Llama 3: 8K tokens a rank)."""
    c = _largest_divisor(math.gcd(*sizes), CP_MAX)
    if ranks == 1:
        return _skip(CP, "one rank: no ring")
    if not c:
        return _skip(CP, "no ring of 2 to %d ranks divides every node's ranks (%s)" % (
            CP_MAX, "/".join(map(str, sorted(set(sizes))))))
    seq = c * m["seq"]
    need = cp_memory(m, c, seq, es)
    why = _too_big(need, memory, "a ring of %d over %d tokens" % (c, seq))
    if why:
        return _skip(CP, why)
    hd = m["hidden"] // m["heads"]
    block = 2 * m["micro_batch"] * m["seq"] * m["kv_heads"] * hd * es
    return _shape(CP, ["--cp", c, "--seq", seq, "--layers", cap_layers],
                  "rings of %d consecutive ranks inside each node over %d tokens, %d a rank (the model's s); %s a "
                  "K/V block, the attention of %s, overlap off and on (%s)%s" % (
                      c, seq, m["seq"], _mib(block), _n(cap_layers, "layer"), where, _cp_check(m, c, seq)),
                  sizes={"cp_block": block, "memory": need})


def moe_memory(m, layers, per_rank, skew, es):
    """Bytes one rank of moe_layer holds at most (pb_moe_bytes, with the heaviest rank's rows taken as
    skew x its even share, an upper bound: only the most loaded expert gets skew x the mean): its
    experts' weights and gradients, what each layer keeps of its tokens and received rows, and the
    scratch of one layer. Exact under uniform load (test_shapes_memory.py)."""
    T, h, f, k = m["micro_batch"] * m["seq"], m["hidden"], m["ffn"], m["top_k"]
    f1 = 2 * f if m["mlp"] == "swiglu" else f
    R = int(skew * T * k)  # a rank's received rows: T*k on average over the EP group, skew times that at most
    weights = 2 * layers * (per_rank * (h * f1 + f * h) + h * m["experts"])
    saved = (layers + 1) * T * h + layers * R * (h + f1 + f)
    scratch = T * m["experts"] + T * k * h + 3 * R * h + R * f1 + 3 * T * h + T * k
    return es * (weights + saved + scratch)


def moe_model(m, gpus):
    """The model moe_layer runs: the run's own when it has experts, else MOE_MODEL_GPU or MOE_MODEL_CPU."""
    return m if m.get("experts") else models.presets()[MOE_MODEL_GPU if gpus else MOE_MODEL_CPU]


def _moe(m, ranks, rpn, nodes, uneven, gpus, where, layers, es, memory):
    """moe_layer: EP inside a node (a node an EP group) and, on several equal nodes, across them (the
    largest group of whole nodes the experts and the ranks divide into), each at uniform and skewed load."""
    mm = moe_model(m, gpus)
    E = mm["experts"]
    if ranks == 1:
        return _skip(EP, "one rank: no expert parallelism")
    groups = []
    if nodes == 1:
        g = next((g for g in range(ranks, 1, -1) if ranks % g == 0 and E % g == 0), 0)
        if g:
            groups.append(("world" if g == ranks else str(g), g))
    elif not uneven and rpn > 1:
        if E % rpn == 0:
            groups.append(("node", rpn))
        across = [g for g in range(2 * rpn, min(ranks, E) + 1, rpn) if ranks % g == 0 and E % g == 0]
        if across:
            groups.append(("world" if across[-1] == ranks else str(across[-1]), across[-1]))
    if not groups:
        return _skip(EP, "%s's %d experts spread over no EP group of whole nodes (%s)" % (mm["name"], E, where))
    layers = min(layers, mm["layers"])
    need = moe_memory(mm, layers, E // min(n for _, n in groups), 2.0, es)
    why = _too_big(need, memory, "%s of %s's experts" % (_n(layers, "layer"), mm["name"]))
    if why:
        return _skip(EP, why)
    a2a = mm["micro_batch"] * mm["seq"] * mm["top_k"] * mm["hidden"] * es
    kinds = " and ".join("%s (%d ranks, %s each)" % ("inside a node" if n <= rpn else "across %d nodes" % (n // rpn),
                                                    n, _n(E // n, "expert")) for _, n in groups)
    spec = ["--model-file", mm["file"]] if mm.get("file") else ["--model", mm["name"]]  # the run's own, from a file
    return _shape(EP, spec + ["--ep-group", ",".join(g for g, _ in groups), "--skew", MOE_SKEWS, "--layers", layers],
                  "%s (%d experts, top %d): EP %s, uniform and skewed (x2) load; %s a rank an all-to-all, %s (%s)"
                  % (mm["name"], E, mm["top_k"], kinds, _mib(a2a), _n(layers, "layer"), where),
                  sizes={"a2a_bytes": a2a, "memory": need})


def _pipeline(m, p, stride, what, ranks, where, job, cap_layers, es, pp_list, memory, d):
    """pp_pipeline's shape: GPipe holds every micro-batch's activations, 1F1B
    p of them; a schedule whose stage does not fit the GPU is left out. The
    micro-batches are the global batch's share of each of the job's d
    pipelines."""
    mbs, real = micro_batches(m, d, pp_list)
    cap_layers = min(cap_layers, -(-m["layers"] // p))  # never more than a stage holds
    held = {"gpipe": max(mbs), "1f1b": min(p, max(mbs))}  # micro-batches a stage holds at once

    def stage(sched, rc):
        return pp_stage_memory(m, cap_layers, held[sched], max(mbs), es, rc)
    rc, _ = _least_recompute(lambda rc: stage("1f1b", rc), memory)  # the least that runs 1F1B, the lighter
    need = {s: stage(s, rc) for s in held}
    scheds = [s for s in ("gpipe", "1f1b") if not _too_big(need[s], memory, "")]
    if not scheds:
        return _skip(PP, _too_big(need["1f1b"], memory, "a 1F1B stage of %s (t 1)%s" % (_n(cap_layers, "layer"),
                                                                                          _with(rc))))
    left = "" if len(scheds) == 2 else "; GPipe left out: %s" % _too_big(need["gpipe"], memory, "its %d micro-batches" % max(mbs))
    return _shape(PP, ["--schedule", ",".join(scheds), "--stages", p, *stride, "--layers", cap_layers * p,
                                  "--micro-batches", ",".join(map(str, mbs)), *_recompute_args(rc)],
                  "%s, %s at once, %d of each stage's %s%s; %s a message, %s a pipeline from "
                  "the global batch (run to %d) (%s)%s%s" % (
                      what, _n(ranks // p, "pipeline"), cap_layers, _n(-(-m["layers"] // p), "layer"), _with(rc),
                      _mib(job["pp_message"]), "%d micro-batch%s" % (real, "" if real == 1 else "es"), max(mbs), where, left,
                      _pp_check(m, cap_layers, max(need[s] for s in scheds), es, memory)),
                  sizes={"pp_message": job["pp_message"], "micro_batches": real, "memory": max(need[s] for s in scheds)})


# p2p_sweep --matrix samples the pairs between nodes above this many ranks (PB_P2P_SCHEDULE_SAMPLE_ABOVE).
MATRIX_SAMPLE_ABOVE = 64
# The GPU memory NCCL is expected to hold a rank for each peer (pb_p2p_matrix_peer_bytes): NCCL_BUFFSIZE
# (4 MiB unless set) x 2 channels x 2 directions. An expectation, not a measurement.
NCCL_BUFFSIZE = 4 << 20


def tournament_rounds(m):
    """Rounds of a round-robin among m players: m - 1 for even m, m for odd m (a bye each round)."""
    return 0 if m < 2 else m if m % 2 else m - 1


def matrix_sampled(nranks):
    """Whether p2p_sweep --matrix samples (without --matrix-pairs): above MATRIX_SAMPLE_ABOVE ranks."""
    return nranks > MATRIX_SAMPLE_ABOVE


def matrix_rounds(nranks, ranks_per_node, sampled=False):
    """Rounds of p2p_sweep --matrix's concurrent schedule, ranks placed by
    blocks of ranks_per_node: a tournament of nodes, each node pair taking as
    many sub-rounds as its larger node has ranks (sampled: 1, its rails, and
    a second, one cross-rail shift, in the first ranks_per_node - 1 node
    rounds), then a tournament inside every node at once. In closed form, so
    that --dry-run answers at once for any world: only the last node may be
    smaller, so every round of the node tournament has a pair with a full node
    (ranks_per_node sub-rounds), and the largest node's own tournament is the
    longest."""
    rpn = min(ranks_per_node, nranks)
    if rpn < 1:
        return 0
    node_rounds = tournament_rounds(-(-nranks // rpn))
    if sampled:
        return node_rounds + min(node_rounds, rpn - 1) + tournament_rounds(rpn)
    return node_rounds * rpn + tournament_rounds(rpn)


def nccl_peer_bytes(env=None):
    """pb_p2p_matrix_peer_bytes: NCCL_BUFFSIZE (the environment's when it is a size) x 2 channels x 2 directions."""
    text = (os.environ if env is None else env).get("NCCL_BUFFSIZE", "")
    try:
        buff = int(text, 0)
    except ValueError:
        buff = 0
    return (buff if buff > 0 else NCCL_BUFFSIZE) * 2 * 2


def matrix_line(ranks, ranks_per_node):
    """What p2p_sweep --matrix would measure in this world, and the NCCL connection memory a rank is expected to hold."""
    sampled, rpn = matrix_sampled(ranks), max(1, min(ranks_per_node, ranks))
    rounds, every = matrix_rounds(ranks, rpn, sampled), matrix_rounds(ranks, rpn)
    peers, peer = min(rounds, ranks - 1), nccl_peer_bytes()
    gib = peers * peer / (1 << 30)
    memory = (f"up to {peers} peers a rank: NCCL connection buffers expected "
              f"{f'{gib:.2f} GiB' if gib >= 1 else f'{gib * 1024:.0f} MiB'} a rank "
              f"({peer >> 20} MiB a peer; an expectation, not measured)")
    if not sampled:
        return f"p2p matrix: every pair, {rounds} rounds; {memory}"
    shifts = min(tournament_rounds(-(-ranks // rpn)), rpn - 1)
    return (f"p2p matrix: sampled pairs above {MATRIX_SAMPLE_ABOVE} ranks (--matrix-pairs all for every pair): "
            f"{rounds} rounds instead of {every}: every node pair's rails, a cross-rail shift in each of the first "
            f"{shifts} node rounds, every pair inside a node; {memory}")


def p2p_pair(ranks, ranks_per_node):
    """p2p_sweep's default pair (pb_p2p_matrix_default_pair), ranks numbered node by node: on several
    nodes rank 0 and the first rank of the next node (both local rank 0: rail 0); on one node
    rank 0 and the last rank, as OSU."""
    if ranks > ranks_per_node:
        return f"p2p pair: ranks 0 and {ranks_per_node} (rail 0, nodes 0 and 1)"
    return f"p2p pair: ranks 0 and {ranks - 1} (node 0)"


def job_of(ranks, ranks_per_node, gpus, model):
    """(t, p, d) of the job shapes() lays out (hybrid_3d's grid)."""
    rpn = min(ranks_per_node, ranks)
    full, rest = divmod(ranks, rpn)
    sizes = [rpn] + ([rest] if rest else [])
    nodes = full + (1 if rest else 0)
    T = _tp_size(sizes, model_of(model), None, min(TP_MAX, gpus) if gpus else TP_MAX)
    P = (_largest_divisor(nodes, PP_MAX_NODES) or 1) if nodes > 1 and not rest else 1
    return T, P, ranks // (T * P)
