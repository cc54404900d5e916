"""suite/meta.py's view of a results directory: meta.json lists the benchmarks'
JSON documents. It is written before the report step and again when that step
is interrupted or the disk fills during it, so by then the directory holds a
meta.json of its own: it is no benchmark, and a result file that cannot be read
(cut short by a full disk) is left out rather than stopping the write. Prints
one line per check; exit 1 if any failed."""
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from suite import meta  # noqa: E402

FAILS = 0


def check(cond, what):
    global FAILS
    FAILS += 0 if cond else 1
    print(("ok: " if cond else "FAIL: ") + what)


def main():
    with tempfile.TemporaryDirectory() as d:
        docs = {"coll_sweep": {"complete": True, "rows": [{}, {}]}, "p2p_sweep": {"complete": False, "rows": []}}
        for name, doc in docs.items():
            with open(os.path.join(d, name + ".json"), "w") as f:
                json.dump(doc, f)
        with open(os.path.join(d, "meta.json"), "w") as f:  # the first write's
            json.dump({"benchmarks": {}}, f)
        with open(os.path.join(d, "tp_layer.json"), "w") as f:  # cut short
            f.write('{"complete": tr')
        got = dict(meta.benchmark_documents(d))
        check(sorted(got) == ["coll_sweep", "p2p_sweep"],
              f"the benchmarks' documents, not meta.json nor a cut one ({sorted(got)})")
        check(got.get("coll_sweep") == docs["coll_sweep"], "a document is read whole")
    print(f"test_meta_documents: {'all checks passed' if not FAILS else f'{FAILS} check(s) failed'}")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
