#!/usr/bin/env python3
"""The parts of scripts/gpu-check.sh that judge results, testable without a GPU
(tests/integration/test_gpu_check.sh feeds them fabricated files).

  gpu-check-judge.py expected GPU_NAME              the node's expected busbw ceiling
  gpu-check-judge.py busbw CSV GPU_NAME RANKS       allreduce busbw vs that expectation
  gpu-check-judge.py devtime BATCHED.csv SINGLE.csv devtime of a batch vs one event pair per operation
  gpu-check-judge.py tp-vs-gemm TP.csv PROBE.csv... tp_layer compute time vs GEMM FLOPs / GEMM rate
                                                    (the probe of tp_layer's dtype, from whichever file has it:
                                                    bf16 on a GPU engine by default)
  gpu-check-judge.py torch-ref OUT.csv N            time torch.matmul (N x N) and copy_ (needs PyTorch and a GPU)
  gpu-check-judge.py vs-torch TORCH.csv PROBE.csv.. compute_probe vs the PyTorch figures
  gpu-check-judge.py nccl-tests OUT.txt              nccl-tests' output (all_reduce_perf, ...): sizes, busbw, #wrong
  gpu-check-judge.py vs-nccl-tests PB.csv TABLE.txt COLL=OUT.txt...
                                                    coll_sweep's rows beside nccl-tests' per size (COLL: allreduce,
                                                    sendrecv), the table written to TABLE.txt and printed
  gpu-check-judge.py run-all DIR BACKEND            a run_all.sh results folder: steps passed and failed, its
                                                    headline, backend, binding, figures drawn or not
  gpu-check-judge.py summary DIR                    write DIR/gpu-check.md from DIR/summary.txt

Judging commands print one headline; it starts with "FAIL: " when the check
failed and with "FINDING: " when a figure misses its reference or expectation
(reported, not a failure). Exit status 0 unless the command itself cannot run
(2: usage, 3: missing file, 77: torch-ref without PyTorch or a GPU).

With PB_REHEARSE=1 (gpu-check.sh --rehearse: CPU stand-ins wrote the files) a
missed GPU figure (busbw against the model, device time, GEMM rates) prints
"REHEARSED: " instead: the files and their columns were read, the figure is
not judged. A missing file, column or row still fails. torch-ref then writes
stand-in figures (0.001 GFLOP/s, 0.001 GB/s: below any machine's, however loaded) when
there is no PyTorch or no GPU.
"""
import csv
import glob
import json
import os
import re
import sys

# Expected all-reduce busbw ceiling of one node, per GPU model: the GPU-to-GPU
# bandwidth of one direction, i.e. half the bidirectional per-GPU figure of the
# NVIDIA datasheet (NVLink total, or the PCIe generation's x16 figure). An
# expectation from the datasheet, not a measurement: nccl-tests typically
# reaches 75-90 % of it on NVLink. First match wins (specific names first).
EXPECTED = [
    # (name pattern, link, bidirectional GB/s per GPU, source)
    (r"GH200", "NVLink 4", 900, "NVIDIA GH200 datasheet: NVLink-C2C / NVLink 900 GB/s"),
    (r"H200 NVL", "NVLink 4 bridge", 900, "NVIDIA H200 datasheet (NVL): 2- or 4-way NVLink bridge 900 GB/s"),
    (r"H200", "NVLink 4", 900, "NVIDIA H200 datasheet (SXM): NVLink 900 GB/s"),
    (r"H100 NVL", "NVLink 4 bridge", 600, "NVIDIA H100 datasheet (NVL): NVLink bridge 600 GB/s"),
    (r"H100.*PCIe", "PCIe 5", 128, "NVIDIA H100 datasheet (PCIe): PCIe Gen5 128 GB/s"),
    (r"H100", "NVLink 4", 900, "NVIDIA H100 datasheet (SXM): NVLink 900 GB/s"),
    (r"H800", "NVLink 4", 400, "NVIDIA H800 (SXM): NVLink 400 GB/s"),
    (r"GB200|B200|B100", "NVLink 5", 1800, "NVIDIA HGX B200 / GB200 datasheet: NVLink 1.8 TB/s per GPU"),
    (r"A100.*PCIE", "PCIe 4", 64, "NVIDIA A100 datasheet (PCIe): PCIe Gen4 64 GB/s (without NVLink bridge)"),
    (r"A100", "NVLink 3", 600, "NVIDIA A100 datasheet (SXM): NVLink 600 GB/s"),
    (r"A800", "NVLink 3", 400, "NVIDIA A800 (SXM): NVLink 400 GB/s"),
    (r"V100.*PCIE", "PCIe 3", 32, "NVIDIA V100 datasheet (PCIe): PCIe Gen3 32 GB/s"),
    (r"V100", "NVLink 2", 300, "NVIDIA V100 datasheet (SXM2): NVLink 300 GB/s"),
    (r"L40S|L40|L4\b|A40|A30|A10\b|RTX", "PCIe 4", 64, "NVIDIA datasheets (L40S, L40, L4, A40, A30, A10, RTX): PCIe Gen4 64 GB/s"),
]
FINDING_BELOW = 0.5   # busbw under half the expected ceiling is worth a look
TORCH_WITHIN = 0.95   # compute_probe within 5 % of PyTorch's cuBLAS
TP_WITHIN = 2.0       # tp_layer compute time within 2x of FLOPs / GEMM rate


REHEARSE = os.environ.get("PB_REHEARSE") == "1"


def miss(kind, text):
    """A GPU figure that missed its limit: FAIL or FINDING, or REHEARSED on CPU stand-ins."""
    return f"{'REHEARSED' if REHEARSE else kind}: {text}"


def die(code, msg):
    print(f"gpu-check-judge.py: {msg}", file=sys.stderr)
    sys.exit(code)


def rows(path):
    """A parabench CSV ('#' lines skipped) as dicts."""
    if not os.path.isfile(path):
        die(3, f"no such file: {path}")
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def expected(name):
    """(link, per-direction GB/s, source) for an nvidia-smi GPU name, or None."""
    for pat, link, bidir, src in EXPECTED:
        if re.search(pat, name, re.IGNORECASE):
            return link, bidir / 2.0, src
    return None


def cmd_expected(name):
    e = expected(name)
    if not e:
        return f"no expectation for '{name}' (not in the table of scripts/gpu-check-judge.py)"
    link, bw, src = e
    return f"{link}: expected busbw ceiling {bw:.0f} GB/s per direction (expectation, {src}, halved)"


def cmd_busbw(path, name, ranks):
    r = [x for x in rows(path) if x.get("collective") == "allreduce" and num(x.get("busbw_GBps")) is not None]
    if not r:
        return "FAIL: no allreduce row with busbw"
    big = max(r, key=lambda x: num(x["bytes"]))
    bw = num(big["busbw_GBps"])
    if int(ranks) < 2:
        return f"allreduce busbw {bw:.1f} GB/s at {big['bytes']} B (1 rank: no expectation)"
    e = expected(name)
    if not e:
        return f"allreduce busbw {bw:.1f} GB/s at {big['bytes']} B; no expectation for '{name}'"
    link, ceiling, src = e
    ratio = bw / ceiling
    text = (f"allreduce busbw {bw:.1f} GB/s at {big['bytes']} B over {ranks} GPUs = {ratio:.2f} of the "
            f"expected {ceiling:.0f} GB/s ({link}; expectation from {src})")
    return miss("FINDING", text) if ratio < FINDING_BELOW else text


def by_size(path):
    out = {}
    for x in rows(path):
        if x.get("collective", "allreduce") != "allreduce":
            continue
        # The host time that brackets each operation: the sample pass's mean, timed one by one (time_us is
        # a whole loop of back-to-back operations, which devtime's own batch may exceed by noise); older
        # files have only time_us, per iteration then.
        dev, t = num(x.get("time_us_device")), num(x.get("time_us_sample_mean", x.get("time_us")))
        if dev is None and REHEARSE:
            dev = t   # the MPI stand-in has no device time: its host time goes through the same arithmetic
        if dev is not None and t is not None:
            out[int(num(x["bytes"]))] = (dev, t)
    return out


def cmd_devtime(batched_csv, single_csv):
    """The batch's devtime must agree with one event pair per operation at the
    largest size (both are device time there) and not exceed it at the
    smallest (where the pair holds the launch); neither above the host time."""
    b, s = by_size(batched_csv), by_size(single_csv)
    sizes = sorted(set(b) & set(s))
    if not sizes:
        return "FAIL: no allreduce size with devtime in both runs"
    for size in sizes:
        if b[size][0] > b[size][1] * 1.05:
            return miss("FAIL", f"at {size} B devtime {b[size][0]:.2f} us exceeds the host time {b[size][1]:.2f} us")
    lo, hi = sizes[0], sizes[-1]
    agree = b[hi][0] / s[hi][0]
    if not 0.9 <= agree <= 1.1:
        return miss("FAIL", f"at {hi} B the batch gives {b[hi][0]:.1f} us per operation, one event pair "
                    f"{s[hi][0]:.1f} us (ratio {agree:.2f}, expected 0.9-1.1)")
    if b[lo][0] > s[lo][0] * 1.05:
        return miss("FAIL", f"at {lo} B the batch gives {b[lo][0]:.2f} us per operation, more than one event "
                    f"pair's {s[lo][0]:.2f} us")
    return (f"devtime at {lo} B: batch {b[lo][0]:.2f} us, one pair {s[lo][0]:.2f} us, host {b[lo][1]:.2f} us; "
            f"at {hi} B batch/pair = {agree:.3f}")


def cmd_tp_vs_gemm(tp_csv, *probe_csvs):
    tp = [x for x in rows(tp_csv) if num(x.get("compute_us")) and num(x.get("gflops")) and num(x.get("step_us"))]
    if not tp:
        return "FAIL: no tp_layer row with compute_us, gflops and step_us"
    x = tp[0]
    flops = num(x["gflops"]) * num(x["step_us"]) * 1e3   # per layer: gflops = flops / step_us
    hidden, dtype = int(num(x["hidden"])), x.get("dtype", "")
    probe = [p for f in probe_csvs for p in rows(f) if p.get("test") == "gemm" and num(p.get("rate"))]
    same = [p for p in probe if p.get("dtype") == dtype]
    if not same:
        return (f"FAIL: no {dtype} GEMM rate in {', '.join(map(os.path.basename, probe_csvs))} (they have "
                f"{', '.join(sorted({p.get('dtype', '?') for p in probe})) or 'none'}): tp_layer ran in {dtype}")
    near = min(same, key=lambda p: abs(num(p["size"]) - hidden))
    rate = num(near["rate"]) * 1e9   # GFLOP/s
    ideal_us = flops / rate * 1e6
    ratio = num(x["compute_us"]) / ideal_us
    text = (f"compute {num(x['compute_us']):.0f} us per layer = {ratio:.2f}x the GEMM FLOPs / "
            f"{num(near['rate']) / 1e3:.1f} TFLOP/s ({near.get('dtype')} {int(num(near['size']))}^3 probe) = "
            f"{ideal_us:.0f} us")
    return text if ratio <= TP_WITHIN else miss("FAIL", f"{text} (limit {TP_WITHIN:.0f}x)")


def standin_ref(out_csv, n, why):
    """Rehearsal without PyTorch or a GPU: the reference file with the real
    rows and stand-in figures, so that vs-torch reads what it will read on a GPU."""
    # Far below any machine's rates: a rehearsal on a loaded machine (a 1 MiB copy once fell below
    # 0.5 GB/s) still compares as a GPU's figures would, above the reference.
    rows_out = [f"gemm,bfloat16,{n},0.001,GFLOP/s", f"gemm,float,{n},0.001,GFLOP/s", f"copy,uint8,{1 << 30},0.001,GB/s"]
    with open(out_csv, "w") as f:
        f.write("\n".join(["test,dtype,size,rate,unit"] + rows_out) + "\n")
    return f"stand-in figures (rehearsal, {why}): " + "; ".join(rows_out)


def cmd_torch_ref(out_csv, size):
    n = int(size)
    try:
        import torch
    except Exception as e:  # noqa: BLE001  (any import failure means: no reference)
        if REHEARSE:
            return standin_ref(out_csv, n, f"no PyTorch: {e}")
        print(f"no PyTorch: {e}")
        sys.exit(77)
    if not torch.cuda.is_available():
        if REHEARSE:
            return standin_ref(out_csv, n, "PyTorch sees no GPU")
        print("PyTorch sees no GPU")
        sys.exit(77)
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 in full fp32, as the cublas engine
    lines = ["test,dtype,size,rate,unit"]

    def timed(fn, iters):
        fn()
        torch.cuda.synchronize()
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        for _ in range(iters):
            fn()
        t1.record()
        torch.cuda.synchronize()
        return t0.elapsed_time(t1) / 1e3 / iters   # seconds per call

    for dt, name in ((torch.bfloat16, "bfloat16"), (torch.float32, "float")):
        a = torch.randn(n, n, device="cuda", dtype=dt)
        b = torch.randn(n, n, device="cuda", dtype=dt)
        sec = timed(lambda: torch.matmul(a, b), 10)
        lines.append(f"gemm,{name},{n},{2.0 * n ** 3 / sec / 1e9:.1f},GFLOP/s")
        del a, b
    nbytes = 1 << 30
    x = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    sec = timed(lambda: y.copy_(x), 20)
    lines.append(f"copy,uint8,{nbytes},{nbytes / sec / 1e9:.1f},GB/s")   # bytes copied once, as compute_probe
    with open(out_csv, "w") as f:
        f.write("\n".join(lines) + "\n")
    return "; ".join(lines[1:])


def cmd_vs_torch(torch_csv, *probe_csvs):
    ref = {(x["test"], x["dtype"], int(num(x["size"]))): num(x["rate"]) for x in rows(torch_csv)}
    got = {}
    for p in probe_csvs:
        for x in rows(p):
            if num(x.get("rate")):
                got[(x["test"], x["dtype"], int(num(x["size"])))] = num(x["rate"])
    parts, missed = [], []
    for (test, dtype, size), r in sorted(ref.items()):
        if test == "copy":
            mine = [v for (t, _, _), v in got.items() if t == "copy"]
            m = max(mine) if mine else None
            what = "copy"
        else:
            m = got.get((test, dtype, size))
            if m is None and REHEARSE:   # the BLAS stand-in runs bf16 in fp32 and says so in its dtype column
                m = next((v for (t, _, sz), v in got.items() if t == test and sz == size), None)
            what = f"{dtype} GEMM {size}"
        if m is None:
            return (f"FAIL: PyTorch's {what} has no compute_probe figure to compare with "
                    f"(not in {', '.join(os.path.basename(p) for p in probe_csvs)})")
        ratio = m / r
        parts.append(f"{what} {ratio:.3f} of PyTorch")
        if ratio < TORCH_WITHIN:
            missed.append(what)
    text = "compute_probe vs PyTorch: " + ", ".join(parts)
    return miss("FINDING", f"{text} (below {TORCH_WITHIN:.2f}: {', '.join(missed)})") if missed else text


def nccl_tests_table():
    """scripts/nccl_tests_table.py, beside this file in the repository and in a bundle (--node only)."""
    import nccl_tests_table as nt  # imported here: the other commands need no copy of it
    return nt


def cmd_nccl_tests(path):
    if not os.path.isfile(path):
        die(3, f"no such file: {path}")
    return nccl_tests_table().headline(path)


def cmd_vs_nccl_tests(pb_csv, table_txt, *pairs):
    """The table of coll_sweep's rows beside nccl-tests' (printed, and written to TABLE_TXT);
    the last line is the headline, a FINDING where parabench is more than 10 % off at the
    largest size both measured."""
    which = []
    for p in pairs:
        coll, _, path = p.partition("=")
        if not path:
            die(2, f"'{p}': expected COLLECTIVE=NCCL_TESTS_OUTPUT")
        which.append((coll, path))
    for path in [pb_csv] + [w[1] for w in which]:
        if not os.path.isfile(path):
            die(3, f"no such file: {path}")
    nt = nccl_tests_table()
    try:
        head, findings = nt.compare(pb_csv, which, table_txt)
    except ValueError as e:
        return f"FAIL: {e}"
    print(open(table_txt).read(), end="")
    if findings:
        return miss("FINDING", f"{head} (more than {nt.WITHIN:.0%} off: {', '.join(findings)})")
    return head


def suite_meta():
    """suite/meta.py (its steps.tsv reader): beside scripts/ in a checkout, in the parabench
    installed in a bundle (libexec/parabench) beside this copy there."""
    here = os.path.dirname(os.path.abspath(__file__))
    for home in (os.path.dirname(here), os.path.join(here, "libexec", "parabench")):
        if os.path.isfile(os.path.join(home, "suite", "meta.py")):
            sys.path.insert(0, home)
            from suite import meta  # imported here: only run-all needs the suite
            return meta
    die(3, f"no suite/meta.py beside {here} (a bundle without an installed parabench?)")


def figures_line(folder):
    """How many figures run_all's report drew, and why the others were not."""
    drawn = len(glob.glob(os.path.join(folder, "plots", "*.png")))
    try:
        report = open(os.path.join(folder, "report.md"), errors="replace").read()
    except OSError:
        return f"{drawn} figures drawn, no report.md"
    why = [w.replace("\\|", "|") for w in re.findall(r"^_not drawn: (.*)_$", report, re.M)]  # markdown's escapes out
    if not why:
        return f"{drawn} figures drawn"
    common = max(set(why), key=why.count)
    return f"{drawn} figures drawn, {len(why)} not ({common.strip()})"


def cmd_run_all(folder, backend):
    """A run_all.sh results folder: FAIL on a step failed, not built or interrupted, or no
    steps.tsv or summary.txt; the backend it ran on and the GPU binding are GPU figures
    (rehearsed with CPU stand-ins); a rank that ran unbound is said, not failed."""
    if not os.path.isfile(os.path.join(folder, "steps.tsv")):
        return f"FAIL: no steps.tsv in {os.path.basename(folder)}: run_all did not start its steps"
    steps = [(r.get("name"), r.get("status"), r.get("rc"), r.get("note", "")) for r in suite_meta().read_steps(folder)]
    bad = [s for s in steps if s[1] not in ("ok", "skipped")]
    counts = (f"{sum(s[1] == 'ok' for s in steps)} steps ok, {len(bad)} failed, "
              f"{sum(s[1] == 'skipped' for s in steps)} skipped")
    try:
        head = open(os.path.join(folder, "summary.txt"), errors="replace").readline().strip()
    except OSError:
        head = ""
    try:
        meta = json.load(open(os.path.join(folder, "meta.json")))
    except (OSError, ValueError):
        meta = {}
    binding = meta.get("binding") or {}
    fallback = binding.get("fallback") or []
    where = (f"backend {meta.get('backend', '?')}, {meta.get('nranks', '?')} ranks ({meta.get('devices', '?')}), "
             f"bound: {binding.get('applied', '?')}" + (f" ({len(fallback)} ranks unbound: {fallback[0]})" if fallback else "")
             + f", NCCL_NVLS_ENABLE {meta.get('nccl_nvls_enable', '?')}")
    text = f"{counts}; {where}; {figures_line(folder)}; headline: {head or 'none'}"
    if bad:
        return "FAIL: " + text + "; failed: " + ", ".join(f"{n} ({st}, exit {rc}: {note})" for n, st, rc, note in bad)
    if not head:
        return f"FAIL: {text}: no summary.txt headline (the report did not run)"
    gpu = []
    if meta.get("backend") != backend:
        gpu.append(f"ran on backend {meta.get('backend')}, not {backend}")
    if backend == "nccl" and binding.get("applied") != "gpu":
        gpu.append(f"ranks bound '{binding.get('applied')}', not near their GPU (bind-near-gpu.sh)")
    return miss("FAIL", "; ".join(gpu) + "; " + text) if gpu else text


STEP = re.compile(r"^(PASS|FAIL|SKIP|FIND|PLAN|REH)\s+(\S+)\s+(\S+)\s+(\S+)\s*(.*)$")


def cmd_summary(folder):
    """One page for a bug report: verdict, node, failures and findings first,
    then every step and the key figures, from summary.txt."""
    src = os.path.join(folder, "summary.txt")
    if not os.path.isfile(src):
        die(3, f"no summary.txt in {folder}")
    head, steps, keys, total = [], [], [], ""
    in_keys = False
    for line in open(src):
        line = line.rstrip("\n")
        m = STEP.match(line)
        if m:
            steps.append(m.groups())
        elif line.startswith("# key figures"):
            in_keys = True
        elif line.startswith("# total:"):
            total = line[2:]
        elif in_keys and line.startswith("#   "):
            keys.append(line[4:])
        elif line.startswith("# ") and not line.startswith("# verdict"):
            head.append(line[2:])
    exit_m = re.search(r"exit (\d+)", total)
    rc = int(exit_m.group(1)) if exit_m else None
    verdict = {0: "PASS", 1: "FAIL", 77: "SKIPPED (no GPU)", 3: "NOT RUN (environment)"}.get(rc, "INCOMPLETE")
    if any(h.startswith("rehearsal:") for h in head):
        verdict = "REHEARSAL " + verdict   # CPU stand-ins: the wiring is checked, not the GPU
    fails = [s for s in steps if s[0] == "FAIL"]
    finds = [s for s in steps if s[0] == "FIND"]
    rehearsed = [s for s in steps if s[0] == "REH"]
    out = [f"# parabench GPU check: {verdict}", ""]
    out += [f"- {h}" for h in head]
    out += [f"- {total}" if total else "- the check did not finish (no total line)", ""]
    out += ["## Failures", ""] + ([f"- **{s[1]}** ({s[2]} ranks): {s[4]}" for s in fails] or ["- none"]) + [""]
    out += ["## Findings (references or expectations missed; not failures)", ""]
    out += ([f"- **{s[1]}**: {s[4]}" for s in finds] or ["- none"]) + [""]
    if rehearsed:
        out += [f"Rehearsed, not judged (GPU figures of CPU stand-ins): {', '.join(s[1] for s in rehearsed)}", ""]
    out += ["## Steps", "", "| verdict | step | ranks | time | headline or reason |", "| --- | --- | --- | --- | --- |"]
    out += [f"| {s[0]} | {s[1]} | {s[2]} | {s[3]} | {s[4].replace('|', '/')} |" for s in steps]
    out += ["", "## Key figures", ""] + ([f"- {k}" for k in keys] or ["- none"]) + [""]
    for table in sorted(glob.glob(os.path.join(folder, "vs-nccl-tests-*.txt"))):   # --node's comparison
        out += [f"## parabench against nccl-tests ({os.path.basename(table)})", "", "```"]
        out += open(table, errors="replace").read().splitlines() + ["```", ""]
    out += ["Details: check.log (every command and its output), summary.txt, and the CSV/JSON files of each step.", ""]
    dst = os.path.join(folder, "gpu-check.md")
    with open(dst, "w") as f:
        f.write("\n".join(out))
    return dst


def main(argv):
    cmds = {"expected": (cmd_expected, 1), "busbw": (cmd_busbw, 3), "devtime": (cmd_devtime, 2),
            "tp-vs-gemm": (cmd_tp_vs_gemm, 2), "torch-ref": (cmd_torch_ref, 2), "summary": (cmd_summary, 1),
            "nccl-tests": (cmd_nccl_tests, 1), "run-all": (cmd_run_all, 2)}
    if len(argv) >= 2 and argv[1] == "vs-torch" and len(argv) >= 4:
        print(cmd_vs_torch(*argv[2:]))
        return 0
    if len(argv) >= 2 and argv[1] == "vs-nccl-tests" and len(argv) >= 5:  # PB.csv TABLE.txt and COLL=FILE...
        print(cmd_vs_nccl_tests(*argv[2:]))
        return 0
    if len(argv) >= 2 and argv[1] == "tp-vs-gemm" and len(argv) >= 4:  # TP.csv and one probe file or more
        print(cmd_tp_vs_gemm(*argv[2:]))
        return 0
    if len(argv) < 2 or argv[1] not in cmds or len(argv) - 2 != cmds[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    print(cmds[argv[1]][0](*argv[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
