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
"""

import math
import re

# common/plan/presets.c: hidden, layers, heads, seq (test_shapes checks they agree).
PRESETS = {
    "tiny": {"hidden": 256, "layers": 4, "heads": 8, "seq": 128},
    "gpt-1.3b": {"hidden": 2048, "layers": 24, "heads": 16, "seq": 2048},
    "llama-7b": {"hidden": 4096, "layers": 32, "heads": 32, "seq": 2048},
    "llama-70b": {"hidden": 8192, "layers": 80, "heads": 64, "seq": 4096},
    "gpt-175b": {"hidden": 12288, "layers": 96, "heads": 96, "seq": 2048},
}

# What tp_layer sweeps in each profile (its own --hidden-list and --seq): t must
# divide every hidden size and, for sequence parallelism, the sequence length.
TP_SWEEP = {
    "quick": {"hidden": [64, 128, 256], "seq": 64},
    "default": {"hidden": [128, 256, 512, 1024], "seq": 128},
    "full": {"hidden": [256, 512, 1024, 2048], "seq": 256},
}

TP_MAX = 8  # an NVLink domain: the GPUs of one node
PP_MAX_NODES = 8  # stages across nodes
PP_MAX_ONE_NODE = 4  # stages on a single node

STEPS = ("coll_sweep_intra", "dp_allreduce", "tp_layer", "pp_pipeline", "hybrid_3d")


def model_of(model):
    """The model a step runs: a preset name, or its arguments as run_all passes
    them (["--model", "tiny", "--layers", "2", ...]): hidden, layers, heads, seq."""
    if isinstance(model, str):
        model = ["--model", model]
    args = list(model)
    name = "tiny"
    if "--model" in args:
        name = args[args.index("--model") + 1]
    if name not in PRESETS:
        raise ValueError("unknown model preset %r; known: %s" % (name, ", ".join(PRESETS)))
    m = dict(PRESETS[name], name=name)
    for key in ("hidden", "layers", "heads", "seq"):
        if "--" + key in args:
            m[key] = int(args[args.index("--" + key) + 1])
    return m


def node_sizes(ranks, ranks_per_node):
    """Ranks of every node, in order: R each, the last holding what is left."""
    full, rest = divmod(ranks, ranks_per_node)
    return [ranks_per_node] * full + ([rest] if rest else [])


def _tp_size(sizes, heads, hiddens, seq, cap):
    """The largest t <= cap dividing every node's rank count, the heads, every
    hidden size and seq (sequence parallelism shards it; None: not run)."""
    for t in range(min(cap, min(sizes)), 0, -1):
        if all(n % t == 0 for n in sizes) and heads % t == 0 and all(h % t == 0 for h in hiddens) and \
                (seq is None or seq % t == 0):
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


def _shape(step, args, describe, note=None):
    return {"step": step, "args": [str(a) for a in args], "describe": describe, "skip": None, "note": note}


def _skip(step, reason):
    return {"step": step, "args": None, "describe": "skipped: " + reason, "skip": reason, "note": None}


def shapes(ranks, ranks_per_node, gpus, model, profile):
    """Every workload step's shape for `ranks` ranks, `ranks_per_node` per node
    (the last node may hold fewer), `gpus` GPUs per node (0 on CPUs), the
    `model` the steps run (a preset name or its arguments) and the run_all
    `profile` (quick, default, full).

    Returns a list, in STEPS order, of dicts:
      step      the run_all step name
      args      the arguments to add to the step's command line (strings), or None when skipped
      describe  one sentence: what runs where
      skip      None, or why the step cannot run on this world
      note      None, or what the binary cannot express here
    """
    if ranks < 1 or ranks_per_node < 1:
        raise ValueError("ranks and ranks_per_node must be positive")
    if profile not in TP_SWEEP:
        raise ValueError("unknown profile %r; known: %s" % (profile, ", ".join(TP_SWEEP)))
    rpn = min(ranks_per_node, ranks)
    full, rest = divmod(ranks, rpn)
    # The distinct node sizes (every node holds rpn, the last what is left): what is
    # asked of "every node" is asked of these, whatever the number of nodes.
    sizes = [rpn] + ([rest] if rest else [])
    nodes = full + (1 if rest else 0)
    uneven = bool(rest)
    m = model_of(model)
    cap = min(TP_MAX, gpus) if gpus else TP_MAX
    where = "%s on %s of %d" % (_n(ranks, "rank"), _n(nodes, "node"), rpn)
    if uneven:
        where += " (the last holds %d)" % rest
    out = []

    # coll_sweep's intra-node sweep: every node's collective at once.
    if nodes > 1 and min(sizes) >= 2:
        out.append(_shape("coll_sweep_intra", ["--groups", "node"],
                          "every collective inside each of the %d nodes at once (%s)" % (nodes, where)))
    else:
        out.append(_skip("coll_sweep_intra", "one node: coll_sweep is already intra-node" if nodes == 1
                         else "a node holds one rank: no collective inside a node"))

    # Data parallelism over every rank.
    out.append(_shape("dp_allreduce", [],
                      "gradient all-reduce over all %s" % where,
                      note="dp_allreduce all-reduces over the whole world; DP across nodes with TP inside "
                           "is hybrid_3d's DP axis"))

    # Tensor parallelism inside a node.
    sweep = TP_SWEEP[profile]
    t = _tp_size(sizes, m["heads"], sweep["hidden"], sweep["seq"], cap)
    split = [h for h in sweep["hidden"] if h % m["heads"]]
    if split:
        out.append(_skip("tp_layer", "the %s profile's hidden sizes %s do not split into the %d heads of %s"
                         % (profile, ",".join(map(str, split)), m["heads"], m["name"])))
    elif ranks == 1:
        out.append(_shape("tp_layer", ["--tp", 1], "one rank: the layer unsharded, no TP communication"))
    elif rpn == 1:
        out.append(_skip("tp_layer", "a node holds one rank: no TP group fits inside a node"))
    elif t == 1:
        out.append(_skip("tp_layer", "no TP size from 2 to %d divides every node's ranks (%s), the %d heads, "
                         "the hidden sizes %s and seq %d" % (min(cap, rpn), "/".join(map(str, sorted(set(sizes)))),
                                                             m["heads"], ",".join(map(str, sweep["hidden"])),
                                                             sweep["seq"])))
    else:
        out.append(_shape("tp_layer", ["--tp", t],
                          "TP %d inside each node: %s of %d consecutive ranks at once (%s)"
                          % (t, _n(ranks // t, "group"), t, where)))

    # Pipeline stages across nodes: stage k on node k, R pipelines side by side.
    p_nodes = _largest_divisor(nodes, PP_MAX_NODES) if nodes > 1 and not uneven else 0
    if ranks == 1:
        out.append(_shape("pp_pipeline", ["--stages", 1, "--layers", m["layers"]],
                          "one rank: one stage, no transfers"))
    elif p_nodes:
        layers = _round_up(m["layers"], p_nodes)
        out.append(_shape("pp_pipeline", ["--stages", p_nodes, "--pp-stride", rpn, "--layers", layers],
                          "%d stages, one per node (stage k of every pipeline on node k of its block of %d nodes), "
                          "%s at once, %d layers (%s)" % (p_nodes, p_nodes, _n(ranks // p_nodes, "pipeline"), layers,
                                                          where)))
    else:
        # One node, or nodes of unequal size (no stride puts one stage per node):
        # pipelines inside each node.
        p = _largest_divisor(math.gcd(*sizes), PP_MAX_ONE_NODE)
        why = "one node" if nodes == 1 else "uneven nodes cannot hold one stage each" if uneven else \
              "no stage count from 2 to %d divides the %d nodes" % (PP_MAX_NODES, nodes)
        if not p:
            out.append(_skip("pp_pipeline", "%s and no stage count from 2 to %d divides every node's ranks (%s)"
                             % (why, PP_MAX_ONE_NODE, "/".join(map(str, sorted(set(sizes)))))))
        else:
            layers = _round_up(m["layers"], p)
            out.append(_shape("pp_pipeline", ["--stages", p, "--layers", layers],
                              "%d stages of consecutive ranks inside a node (%s), %s at once, %d layers (%s)"
                              % (p, why, _n(ranks // p, "pipeline"), layers, where)))

    # hybrid_3d: TP inside the node, PP across nodes, DP over the rest.
    T = _tp_size(sizes, m["heads"], [m["hidden"]], None, cap)  # hybrid_3d's TP all-reduces: seq stays whole
    P = p_nodes if p_nodes else 1
    D = ranks // (T * P)
    if T == 1 and P == 1:
        out.append(_skip("hybrid_3d", "TP 1 x PP 1 (%s, %d heads): the grid is DP alone, which dp_allreduce "
                         "measures" % (where, m["heads"])))
    else:
        layers = _round_up(m["layers"], P)
        lt, lp, ld = hybrid_links(ranks, rpn, T, P, D)
        out.append(_shape("hybrid_3d", ["--tp", T, "--pp", P, "--dp", D, "--layers", layers, "--compare-placements"],
                          "TP %d x PP %d x DP %d, %d layers; tp-inner puts TP %s, PP %s, DP %s (%s)"
                          % (T, P, D, layers, lt, lp, ld, where)))
    return out


def presets_of_c(text):
    """The presets declared in common/plan/presets.c: name -> hidden, layers, heads, seq."""
    found = {}
    for name, h, L, a, s in re.findall(r'\{"([\w.-]+)", (\d+), (\d+), (\d+), (\d+),', text):
        found[name] = {"hidden": int(h), "layers": int(L), "heads": int(a), "seq": int(s)}
    return found
