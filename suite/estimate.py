"""An upper bound on each step's duration, before anything runs (--dry-run):
the launch overhead plus what caps the step's measurements, never more than
the step's wall-clock limit.
 - sweeps: --max-seconds-per-size (warm-up included) x sizes x collectives
   (or modes): every size at its cap;
 - the all-pairs matrix: its rounds (the concurrent schedule p2p_sweep
   --matrix runs, common/coll/p2p_schedule.c, sampled above 64 ranks) x its
   sizes x the cap;
 - workloads (dp, tp, pp, hybrid): their configurations (the product of
   the lists their axes options hold, e.g. gradient sizes x overlap modes)
   x --max-seconds-per-size, which caps each configuration, warm-up included;
 - steps whose arguments are chosen at run time (--reproduce): the limit;
 - tools, scripts and the report: a fixed allowance.
Real runs are usually much shorter: a size stops at its iteration count long
before its cap unless messages are large or links slow."""
from suite.manifest import MPI
from suite.shapes import matrix_rounds, matrix_sampled, tournament_rounds  # noqa: F401  (tournament_rounds: the tests')
from suite.units import size  # noqa: F401  (estimate.size: a size as the options read it)

TOOL_SECONDS = 10  # the allowance of a step that is not launched on the ranks
# An axis given by a flag: how many configurations it stands for (hybrid_3d
# --compare-placements runs tp-inner, dp-inner and naive).
FLAG_AXES = {"--compare-placements": 3}


def sweep_sizes(first, last, factor):
    """Sizes from -b to -e by -f: first, first * factor, ... <= last."""
    if factor < 2 or first == 0:
        return 1 if first <= last else 0
    n, b = 0, first
    while b <= last:
        n, b = n + 1, b * factor
    return n


def nodes_of(nranks, ranks_per_node):
    return (nranks + ranks_per_node - 1) // ranks_per_node


def launch_seconds(nranks, ranks_per_node):
    """2 s, plus 0.05 s per node the launcher reaches (an assumption, not a measurement)."""
    return 2.0 + 0.05 * nodes_of(nranks, ranks_per_node)


def option(args, name):
    return args[args.index(name) + 1] if name in args else None


def count(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def axis_count(args, name):
    """Configurations along one axis: a flag's FLAG_AXES count (1 without it),
    else the length of the option's last comma-separated list (1 without it)."""
    if name in FLAG_AXES:
        return FLAG_AXES[name] if name in args else 1
    given = [args[i + 1] for i, a in enumerate(args[:-1]) if a == name]
    return len(given[-1].split(",")) if given else 1


def configurations(args, axes):
    """(configurations, "4 gradient sizes x 2 overlaps"): the product over the axes."""
    n, what = 1, []
    for name, word in axes:
        k = axis_count(args, name)
        n, what = n * k, what + [count(k, word)]
    return n, " x ".join(what)


# The options whose "all" stands for a binary's table, and the table (`BINARY --list WHAT`, tables.py).
ALL_OF = {"--coll": "collectives", "--mode": "modes"}


class Estimate:
    """Bounds for the steps of one run. choices: the names "all" stands for,
    per option (ALL_OF), as the binaries list them."""

    def __init__(self, run, choices):
        self.run, self.choices = run, choices
        self.limit = run.limits.step_limit
        self.launch = launch_seconds(run.nranks, run.ranks_per_node)

    def launched(self, bound, what):
        t = self.launch + bound
        if t > self.limit:
            return self.limit, f"the step limit ({what} would be {t:.0f} s)"
        return t, f"{what} + {self.launch:.1f} s launch"

    def sweep(self, args):
        """Sizes x cap, times the collectives (--coll) or modes (--mode) it runs: "all" stands for
        every name the binary lists. A sweep of one operation (neither option) counts once."""
        cap = float(option(args, "--max-seconds-per-size"))
        sizes = sweep_sizes(size(option(args, "-b")), size(option(args, "-e")), int(option(args, "-f")))
        what = f"{sizes} sizes x {cap:g} s cap"
        items = 1
        for name, word in (("--coll", "collective"), ("--mode", "mode")):
            if name in args:
                chosen = option(args, name).split(",")
                items = len(self.choices[name]) if chosen == ["all"] else len(chosen)
                what = f"{count(items, word)} x {what}"
        return self.launched(items * sizes * cap, what)

    def matrix(self, args):
        sampled = matrix_sampled(self.run.nranks) and option(args, "--matrix-pairs") != "all"
        rounds = matrix_rounds(self.run.nranks, self.run.ranks_per_node, sampled)
        sizes, cap = len(option(args, "--sizes").split(",")), float(option(args, "--max-seconds-per-size"))
        return self.launched(rounds * sizes * cap, f"{rounds} rounds x {sizes} sizes x {cap:g} s cap")

    def configs(self, step):
        args = step.args(self.run)
        n, what = configurations(args, step.axes)
        cap = float(option(args, "--max-seconds-per-size"))
        return self.launched(n * cap, f"{what} x {cap:g} s cap")

    def bound(self, step):
        """(seconds, what bounds it) for one step; (0, why) when it is skipped."""
        why = step.skip(self.run)
        if why:
            return 0, f"skipped: {why}"
        if step.cost == "sweep":
            return self.sweep(step.args(self.run))
        if step.cost == "matrix":
            return self.matrix(step.args(self.run))
        if step.cost == "configs":
            return self.configs(step)
        if step.cost == "limit":
            return self.limit, "the step limit (arguments chosen at run time)"
        return TOOL_SECONDS, f"a fixed allowance ({step.allowance})"

    def bounds(self, steps):
        """(step, seconds, what bounds it) for each step."""
        return [(step, *self.bound(step)) for step in steps]

    def lines(self, steps):
        run = self.run
        out = [f"# upper bound on each step's duration: {run.nranks} ranks on "
               f"{nodes_of(run.nranks, run.ranks_per_node)} node(s) of {run.ranks_per_node}; every size or workload",
               f"# configuration at its cap, no step over the step limit ({self.limit:.0f} s); launch "
               f"{self.launch:.1f} s per step (assumed, not measured)"]
        total = 0
        for step, seconds, why in self.bounds(steps):
            total += seconds
            out.append("%-18s %8.0f s  %s" % (step.name, seconds, why))
        out.append("%-18s %8.0f s  (%.1f min) at most" % ("total", total, total / 60))
        return out


def sweeps_need(steps):
    """The MPI binaries that list what "all" means in these steps."""
    return {s.binary for s in steps if s.kind == MPI and s.cost == "sweep"}
