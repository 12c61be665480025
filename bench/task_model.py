#!/usr/bin/env python3
"""The many-core model: fbngrad_bench's task report (--fbngrad_task_report) as a table.

For each benchmark: the tasks of each parallel loop, the many-core rule's minimum
(min(256, elements / 16384)), and the speed-up a call would reach on P cores,
MODELLED from the serially measured task times (not measured on P cores):

    time(P) = serial + sum over loops of the loop's time on P cores

where `serial` is the call's time outside every task (the per-channel work between the
loops, the call's own overhead), and a loop's time on P cores is, by --schedule:
  greedy (default)  each task, in index order, goes to the core that is free first: a
                    runner that hands out tasks from a shared counter or steals work
                    (Halide's pool, OpenMP's schedule(dynamic), oneTBB; fbngrad's own
                    pool hands out runs of consecutive tasks, a coarser grain)
  waves             the tasks in waves of P, each wave as long as its longest task: a
                    runner with a barrier after every P tasks, which none of those has;
                    the pessimistic bound
Memory bandwidth is ignored: on a real machine the large shapes stop at the memory's
limit well before P cores (docs/threads.md).

    build/venv/bin/python bench/task_model.py report.json [--cores 4,8,16,32,64] [--schedule greedy] [--markdown]
    build/venv/bin/python bench/task_model.py report.json --against base.json [--control N,H,W,C] [--markdown]

With --reversed REPORT (a report of the same benchmarks taken with fbngrad_bench
--fbngrad_task_order=reverse), it prints instead, for each loop of 16 tasks or more, how
alike the two orders time the same task (Pearson's r over the tasks) and the spread (the
longest task over the median) in each: a spread that follows the task (r near 1) is in
its data and a parallel run has it too; one that does not is the order or noise.

With --against BASE (a report of the same benchmarks from another build), it prints instead,
for each benchmark in both, the tasks and their total time in BASE and here, and their ratio
(here over BASE, below 1: faster here), for the call and for each loop (the same loops; their
tasks may differ, "base -> this"): each task timed alone at its fastest, this is the measure
of a change to the kernels' work that the whole call's time on 2 cores hides in its noise. Between
two binaries it also carries where each one's code lies: take several pairs of reports, and a
shape the change cannot affect as the control (docs/threads.md). --control N,H,W,C divides each
ratio by that shape's (the same peer, dtype, layout and mode; the call's by its call's, each loop's
by its loop's): two reports, even of one binary, drift as a whole by up to a third.

With --outside, it prints instead where each call's time outside its tasks falls, in
microseconds on the timing runner: before the first loop (the call's checks, the choice of
a kernel, the kernel's buffers), between each two loops (the per-channel work), after the
last (the buffers' release, the return); from the report's gap_us (reports since
2026-12-06). That time is serial on any number of cores.

A report taken with fbngrad_bench --fbngrad_task_thread=worker ran the tasks on a thread of
the timing runner's own while the calling thread waited: the call's own work then finds the
caches of a caller among many cores (which streams a P-th of the tensors), not those of one
core that streamed all of them; the header says which (docs/threads.md).

With --ranges MORE... (reports of the same benchmarks, e.g. several runs of the same build), it
prints instead each benchmark's lowest and highest modelled speed-up over REPORT and MORE, and
for each report how many of its N = 32 ResNet-50 rows reach the many-core targets (12 at P = 16,
40 at P = 64: the tables of docs/threads.md; with --markdown a figure below its target is bold),
with the report's median round trip where it has one. With --near NS as well, each row's range apart
over the reports where that row's round trip was below NS ns (near) and over the others (far), and
per side how many (report, row) pairs of the ResNet-50 rows reach the targets: the round trip can
change within a report, as the host moves the VM's vCPUs.

Reports since 2026-12-07 carry, per benchmark, the round trip of a cache line from the calling
thread to the timing runner's worker and back (round_trip_ns, taken before the benchmark's
calls): a loop's hand-over and its first task's reads of what the calling thread wrote cost a
few such trips, so the figures of the small shapes follow it. The table prints its median and
range below; --outside prints it per row.

With --split K, the model's table as if each task were K tasks of 1/K its time (the rule's
column then counts those): a what-if for a finer decomposition, before building it. It adds no
cost for the extra tasks, their partial sums or the runner, so it bounds what the split could give.
"""

import argparse
import heapq
import json
import math
import statistics
import sys

RULE_MAX_TASKS = 256
RULE_ELEMENTS_PER_TASK = 16384


def required_tasks(elements):
    """The many-core rule's minimum task count of every parallel loop (generators/schedule.h)."""
    return max(1, min(RULE_MAX_TASKS, elements // RULE_ELEMENTS_PER_TASK))


# A loop whose tasks take at least this share of the heaviest loop's time is a loop
# over the tensors (each of those reads them whole), and the rule asks it for
# min(256, elements / 16384) tasks. A lighter one works on less: the NHWC combine of
# the sum blocks' partials reads C values a block, a few percent of the tensors. The
# report cannot say how many elements a loop touches, so its time share stands in
# for it: such a loop is asked for the rule's count of `share * elements`.
TENSOR_LOOP_SHARE = 0.25


def loop_requirements(elements, loop_work):
    """The rule's minimum for each loop, from the loops' total task times (see TENSOR_LOOP_SHARE)."""
    heaviest = max(loop_work, default=0.0)
    out = []
    for w in loop_work:
        share = w / heaviest if heaviest > 0 else 1.0
        out.append(required_tasks(elements if share >= TENSOR_LOOP_SHARE else int(elements * share)))
    return out


def loop_time_waves(task_us, cores):
    """One loop's modelled time: its tasks in waves of `cores`, each wave as long as its longest task."""
    return sum(max(task_us[i:i + cores]) for i in range(0, len(task_us), cores))


def loop_time_greedy(task_us, cores):
    """One loop's modelled time: each task, in index order, on the core that is free first."""
    free_at = [0.0] * min(cores, len(task_us))
    for t in task_us:
        heapq.heapreplace(free_at, free_at[0] + t)
    return max(free_at, default=0.0)


LOOP_TIME = {"greedy": loop_time_greedy, "waves": loop_time_waves}


def model(bench, cores, schedule="greedy"):
    """{P: modelled speed-up} for one benchmark of the report."""
    loop_time = LOOP_TIME[schedule]
    loops = [loop["task_us"] for loop in bench["loops"]]
    call = bench["call_us"]
    serial = max(0.0, call - sum(sum(t) for t in loops))
    out = {}
    for p in cores:
        t = serial + sum(loop_time(l, p) for l in loops)
        out[p] = call / t if t > 0 else math.inf
    return out


# The many-core targets (docs/threads.md): the modelled speed-up every N = 32 ResNet-50 row should reach.
TARGETS = {16: 12.0, 64: 40.0}
# Those rows: the ResNet-50 shapes of fbngrad_bench.cpp's catalogue (kShapes), N,H,W,C.
RESNET50 = {"32,112,112,64", "32,56,56,64", "32,56,56,256", "32,28,28,128", "32,28,28,512",
            "32,14,14,256", "32,14,14,1024", "32,7,7,512", "32,7,7,2048"}


def is_resnet50(name):
    return short_name(name).split(" ")[-1] in RESNET50


def reaches_targets(speedup, cores):
    """Whether one row's modelled speed-ups ({P: x}) reach every target among `cores`."""
    return all(speedup[p] >= TARGETS[p] for p in cores if p in TARGETS)


def span(speedups, cores):
    """{P: (lowest, highest)} over several of one row's {P: x}."""
    return {p: (min(s[p] for s in speedups), max(s[p] for s in speedups)) for p in cores}


def targets_text(cores):
    """"12 at P = 16, 40 at P = 64" for the targets among `cores`, or "" where none is."""
    return ", ".join(f"{TARGETS[p]:g} at P = {p}" for p in cores if p in TARGETS)


def range_cells(r, cores, markdown):
    """One row's "lowest–highest" per P, a figure below its target bold in Markdown."""
    def cell(p, x):
        text = f"{x:.1f}"
        return f"**{text}**" if markdown and p in TARGETS and x < TARGETS[p] else text
    return [f"{cell(p, r[p][0])}–{cell(p, r[p][1])}" for p in cores]


def speedups_by_name(tables):
    """[{name: {P: x}}] per report's rows(); ValueError where a row of the first is missing in another."""
    speedups = [{r["name"]: r["speedup"] for r in t} for t in tables]
    for name in speedups[0]:
        if any(name not in s for s in speedups[1:]):
            raise ValueError(f"{short_name(name)} is not in every report")
    return speedups


def range_rows(tables, cores):
    """[(name, {P: (lowest, highest)})] over several reports' rows(), in the first one's order."""
    speedups = speedups_by_name(tables)
    return [(name, span([s[name] for s in speedups], cores)) for name in speedups[0]]


def regime_rows(reports, tables, cores, near_ns):
    """[(name, near, far)] over several reports' rows(), in the first one's order: near and far each
    (count, {P: (lowest, highest)}, rows reaching every target among `cores`) over the reports where
    that benchmark's round_trip_ns was below near_ns, and the others; (0, None, 0) where none."""
    trips = [{b["name"]: b.get("round_trip_ns") for b in r["benchmarks"]} for r in reports]
    speedups = speedups_by_name(tables)
    out = []
    for name in speedups[0]:
        if any(t.get(name) is None for t in trips):
            raise ValueError(f"{short_name(name)} has no round_trip_ns in every report (reports since 2026-12-07)")
        sides = []
        for near in (True, False):
            got = [s[name] for s, t in zip(speedups, trips) if (t[name] < near_ns) == near]
            if not got:
                sides.append((0, None, 0))
                continue
            sides.append((len(got), span(got, cores), sum(reaches_targets(g, cores) for g in got)))
        out.append((name, sides[0], sides[1]))
    return out


def format_regimes(rows, cores, markdown):
    def side(s):
        n, r, _ = s
        return [str(n)] + (range_cells(r, cores, markdown) if r else ["-"] * len(cores))
    head = ["case", "near: reports"] + [f"P={p}" for p in cores] + ["far: reports"] + [f"P={p}" for p in cores]
    body = [[short_name(n)] + side(near) + side(far) for n, near, far in rows]
    return format_rows(head, body, markdown)


def meets_targets(table, cores):
    """(ResNet-50 rows that reach every target among `cores`, ResNet-50 rows) of one report's rows()."""
    resnet = [r for r in table if is_resnet50(r["name"])]
    return sum(reaches_targets(r["speedup"], cores) for r in resnet), len(resnet)


def format_ranges(ranges, cores, markdown):
    head = ["case"] + [f"P={p}" for p in cores]
    body = [[short_name(n)] + range_cells(r, cores, markdown) for n, r in ranges]
    return format_rows(head, body, markdown)


def split_tasks(report, k):
    """The report with each task as k tasks of 1/k its time (--split): a what-if for a finer
    decomposition, with no cost added for the extra tasks or their partial sums."""
    out = dict(report)
    out["benchmarks"] = [dict(b, loops=[{"tasks": loop["tasks"] * k,
                                         "task_us": [t / k for t in loop["task_us"] for _ in range(k)]}
                                        for loop in b["loops"]])
                         for b in report["benchmarks"]]
    return out


def rows(report, cores, schedule="greedy"):
    """One dict per benchmark: name, elements, tasks per loop, required, meets, serial share, speed-ups."""
    out = []
    for b in report["benchmarks"]:
        tasks = [loop["tasks"] for loop in b["loops"]]
        loop_work = [sum(loop["task_us"]) for loop in b["loops"]]
        needs = loop_requirements(b["elements"], loop_work)
        work = sum(loop_work)
        out.append({
            "name": b["name"],
            "elements": b["elements"],
            "tasks": tasks,
            "required": needs,
            "meets": all(t >= need for t, need in zip(tasks, needs)),
            "serial_share": max(0.0, b["call_us"] - work) / b["call_us"] if b["call_us"] > 0 else 0.0,
            "speedup": model(b, cores, schedule),
        })
    return out


def outside_rows(report):
    """(name, call_us, outside_us, before, [between...], after, round trip ns or None) per benchmark,
    from gap_us."""
    out = []
    for b in report["benchmarks"]:
        gaps = b["gap_us"]
        if len(gaps) != len(b["loops"]) + 1:
            raise ValueError(f"{b['name']}: gap_us has {len(gaps)} values for {len(b['loops'])} loops")
        out.append((b["name"], b["call_us"], sum(gaps), gaps[0], gaps[1:-1], gaps[-1], b.get("round_trip_ns")))
    return out


def paired(report, other):
    """(benchmark, the same benchmark in other) for each benchmark of report that other has too."""
    others = {b["name"]: b for b in other["benchmarks"]}
    return [(b, others[b["name"]]) for b in report["benchmarks"] if b["name"] in others]


def with_shape(name, shape):
    """fbngrad/float32/NHWC/train/32,7,7,512/real_time with 32,28,28,128 in the shape's place."""
    parts = name.split("/")
    if len(parts) < 5:
        raise ValueError(f"{name}: no shape in this benchmark's name")
    return "/".join(parts[:4] + [shape] + parts[5:])


def against_rows(report, base, control=None):
    """(name, tasks, base's tasks' total us, this one's, ratio, each loop's ratio) per benchmark in both.

    The loops must be the same (their number); their tasks may differ, as where a change cuts the
    same work into other tasks: tasks reads "base -> this" for such a loop. With `control` (a shape,
    N,H,W,C), each ratio is divided by that of the benchmark of the same peer, dtype, layout and mode
    with that shape, the call's by its call's and each loop's by its loop's: a shape the change
    cannot affect, whose ratio is how far the two reports drift as a whole."""
    rows = against_raw(report, base)
    if control is None:
        return rows
    by_name = {row[0]: row for row in rows}
    out = []
    for name, tasks, theirs, mine, ratio, loops in rows:
        c = by_name.get(with_shape(name, control))
        if c is None:
            raise ValueError(f"{name}: no {control} of its kind in both reports to divide by")
        scaled = [x / c[5][i] if i < len(c[5]) and c[5][i] > 0 else math.inf for i, x in enumerate(loops)]
        out.append((name, tasks, theirs, mine, ratio / c[4] if c[4] > 0 else math.inf, scaled))
    return out


def against_raw(report, base):
    """against_rows without the control: the ratios as the two reports give them."""
    out = []
    for b, o in paired(report, base):
        if len(b["loops"]) != len(o["loops"]):
            raise ValueError(f"{b['name']}: {len(b['loops'])} loops here, {len(o['loops'])} in the base")
        tasks, loops, theirs, mine = [], [], 0.0, 0.0
        for here, there in zip(b["loops"], o["loops"]):
            n, m = len(there["task_us"]), len(here["task_us"])
            tasks.append(str(n) if n == m else f"{n} -> {m}")
            a, z = sum(there["task_us"]), sum(here["task_us"])
            loops.append(z / a if a > 0 else math.inf)
            theirs, mine = theirs + a, mine + z
        out.append((b["name"], ", ".join(tasks), theirs, mine, mine / theirs if theirs > 0 else math.inf, loops))
    return out


def pearson(xs, ys):
    """Pearson's correlation of two equally long lists (0 where either is constant)."""
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:  # a constant list (or fewer than two values)
        return 0.0


def spread(task_us):
    """The longest task over the median task."""
    median = statistics.median(task_us)
    return max(task_us) / median if median > 0 else math.inf


def order_rows(report, reversed_report, min_tasks=16):
    """Per loop of at least min_tasks tasks: (name, loop, tasks, r, spread in index order, reversed)."""
    out = []
    for b, r in paired(report, reversed_report):
        if len(r["loops"]) != len(b["loops"]):
            raise ValueError(f"{b['name']}: {len(b['loops'])} loops against {len(r['loops'])} in the reversed report")
        for i, (a, z) in enumerate(zip(b["loops"], r["loops"])):
            if len(a["task_us"]) != len(z["task_us"]):
                raise ValueError(f"{b['name']} loop {i}: {len(a['task_us'])} tasks against {len(z['task_us'])}")
            if len(a["task_us"]) >= min_tasks:
                out.append((short_name(b["name"]), i, len(a["task_us"]), pearson(a["task_us"], z["task_us"]),
                            spread(a["task_us"]), spread(z["task_us"])))
    return out


# Steal time over this share of the report's: the hypervisor gave the VM's vCPUs
# to something else often enough that the fastest of the calls may carry it.
DISTURBED_STEAL = 0.01


def disturbance(report):
    """One line on the VM's steal time while the report was taken (reports with steal_ms), or None."""
    if "steal_ms" not in report:
        return None
    steal, wall = report["steal_ms"], report.get("wall_ms", 0)
    if steal < 0:
        return "Steal time unknown (no /proc/stat)."
    if steal > DISTURBED_STEAL * wall:
        return (f"Disturbed: the VM's steal time was {steal:.0f} ms of {wall / 1000:.0f} s: the host ran something "
                "else on these cores; take the figures again.")
    return f"Steal time {steal:.0f} ms of {wall / 1000:.0f} s."


def round_trip(report):
    """The median, lowest and highest round_trip_ns over the report's benchmarks (reports since
    2026-12-07 carry one a benchmark), or None."""
    trips = [b["round_trip_ns"] for b in report["benchmarks"] if "round_trip_ns" in b]
    return (statistics.median(trips), min(trips), max(trips)) if trips else None


def round_trip_line(report):
    """One line on the round trip between the calling thread and the timing runner's worker, or None."""
    trip = round_trip(report)
    if trip is None:
        return None
    median, low, high = trip
    return (f"Round trip of a cache line from the calling thread to the worker and back: {median:.0f} ns "
            f"(median; {low:.0f}-{high:.0f} over the benchmarks).")


def short_name(name):
    """fbngrad/float32/NHWC/train/32,56,56,64/real_time -> float32 NHWC train 32,56,56,64."""
    parts = [p for p in name.split("/") if p and p != "real_time" and not p.startswith("threads:")]
    return " ".join(parts[1:]) if parts and parts[0].startswith("fbngrad") else " ".join(parts)


def format_rows(head, body, markdown):
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    fmt = lambda row: "  ".join(x.ljust(w) for x, w in zip(row, widths))  # noqa: E731
    return "\n".join([fmt(head)] + [fmt(row) for row in body])


def format_table(table, cores, markdown):
    head = ["case", "tasks per loop", "rule", "meets", "serial"] + [f"P={p}" for p in cores]
    body = [[short_name(r["name"]), ", ".join(map(str, r["tasks"])), ", ".join(map(str, r["required"])),
             "yes" if r["meets"] else "NO", f"{100 * r['serial_share']:.1f} %"] +
            [f"{r['speedup'][p]:.1f}" for p in cores] for r in table]
    return format_rows(head, body, markdown)


def parse_cores(text):
    try:
        cores = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"want positive integers such as 4,8,16, got {text!r}")
    if not cores or any(p <= 0 for p in cores):
        raise argparse.ArgumentTypeError(f"want positive integers such as 4,8,16, got {text!r}")
    return cores


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="the JSON file of fbngrad_bench --fbngrad_task_report")
    ap.add_argument("--cores", type=parse_cores, default=[4, 8, 16, 32, 64], help="P values (default 4,8,16,32,64)")
    ap.add_argument("--schedule", choices=sorted(LOOP_TIME), default="greedy",
                    help="how a runner hands out a loop's tasks (default greedy; see the module's doc)")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    ap.add_argument("--reversed", metavar="REPORT",
                    help="compare with a report taken with --fbngrad_task_order=reverse (see the module's doc)")
    ap.add_argument("--against", metavar="BASE",
                    help="the tasks' total time against a report of another build (see the module's doc)")
    ap.add_argument("--control", metavar="N,H,W,C",
                    help="with --against: each ratio divided by that of this shape's benchmark of the same kind "
                         "(see the module's doc)")
    ap.add_argument("--outside", action="store_true",
                    help="where each call's time outside its tasks falls (see the module's doc)")
    ap.add_argument("--ranges", nargs="+", metavar="MORE",
                    help="more reports of the same benchmarks: each row's lowest and highest speed-up over all "
                         "(see the module's doc)")
    ap.add_argument("--near", type=float, metavar="NS",
                    help="with --ranges: each row's range apart over the reports where its round trip was below "
                         "NS ns and over the others (see the module's doc)")
    ap.add_argument("--split", type=int, default=1, metavar="K",
                    help="what-if: each task as K tasks of 1/K its time, no cost added (see the module's doc)")
    args = ap.parse_args(argv)
    if args.split < 1:
        ap.error(f"--split wants a positive integer, got {args.split}")
    if sum(map(bool, (args.outside, args.reversed, args.against, args.ranges))) > 1:
        ap.error("--outside, --reversed, --against and --ranges are different tables: give one")
    if args.control and not args.against:
        ap.error("--control goes with --against")
    if args.near is not None and not args.ranges:
        ap.error("--near goes with --ranges")
    if args.near is not None and args.near <= 0:
        ap.error(f"--near wants a round trip in ns above 0, got {args.near:g}")
    try:
        with open(args.report) as f:
            report = json.load(f)
        if args.reversed:
            with open(args.reversed) as f:
                reversed_report = json.load(f)
            pairs = order_rows(report, reversed_report)
        if args.against:
            with open(args.against) as f:
                against = against_rows(report, json.load(f), args.control)
        table = rows(split_tasks(report, args.split) if args.split > 1 else report, args.cores, args.schedule)
        outside = outside_rows(report) if args.outside else None
        if args.ranges:
            more = []
            for path in args.ranges:
                with open(path) as f:
                    more.append((path, json.load(f)))
            first = table if args.split == 1 else rows(report, args.cores, args.schedule)  # ranges take no --split
            tables = [first] + [rows(r, args.cores, args.schedule) for _, r in more]
            ranges = range_rows(tables, args.cores)
            if args.near is not None:
                regimes = regime_rows([report] + [r for _, r in more], tables, args.cores, args.near)
            counts = [(p, meets_targets(t, args.cores), round_trip(r))
                      for (p, r), t in zip([(args.report, report)] + more, tables)]
    except KeyError as e:
        if args.outside and e.args == ("gap_us",):
            print(f"task_model.py: {args.report} has no gap_us (a report from before 2026-12-06): --outside "
                  "needs a report of a newer fbngrad_bench", file=sys.stderr)
            return 1
        print(f"task_model.py: cannot read {args.report}: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError, TypeError) as e:
        other = args.reversed or args.against or (" or ".join(args.ranges) if args.ranges else None)
        print(f"task_model.py: cannot read {args.report}{' or ' + other if other else ''}: {e}", file=sys.stderr)
        return 1
    if not table:
        print(f"task_model.py: {args.report} holds no benchmark (was --fbngrad_task_report given a filter "
              "that matched fbngrad benchmarks?)", file=sys.stderr)
        return 1
    if args.reversed:
        if not pairs:
            print(f"task_model.py: no loop of 16 tasks or more is in both {args.report} and {args.reversed}",
                  file=sys.stderr)
            return 1
        print("The same task timed in index order and in reverse: r (Pearson) and spread (longest / median).")
        head = ["case", "loop", "tasks", "r", "spread (index)", "spread (reverse)"]
        body = [[n, str(i), str(t), f"{r:.2f}", f"{a:.2f}", f"{z:.2f}"] for n, i, t, r, a, z in pairs]
        print(format_rows(head, body, args.markdown))
        return 0
    if args.against:
        if not against:
            print(f"task_model.py: no benchmark is in both {args.report} and {args.against}", file=sys.stderr)
            return 1
        print(f"The tasks' total time (us, each task's fastest): {args.against} and {args.report}" +
              (f"; the ratios divided by {args.control}'s of the same kind." if args.control else "."))
        head = ["case", "tasks", "base", "this", "this / base", "each loop"]
        body = [[short_name(n), t, f"{a:.2f}", f"{b:.2f}", f"{r:.3f}", ", ".join(f"{x:.3f}" for x in loops)]
                for n, t, a, b, r, loops in against]
        print(format_rows(head, body, args.markdown))
        return 0
    if args.outside:
        print("Time outside the tasks on the timing runner (us): before the first loop, between loops, after the last.")
        trips = any(trip is not None for *_, trip in outside)
        head = ["case", "call", "outside", "share", "before", "between", "after"] + (["round trip ns"] if trips else [])
        body = [[short_name(n), f"{call:.1f}", f"{total:.2f}", f"{100 * total / call if call > 0 else 0:.1f} %",
                 f"{before:.2f}", ", ".join(f"{g:.2f}" for g in between) or "-", f"{after:.2f}"] +
                ([f"{trip:.0f}" if trip is not None else "-"] if trips else [])
                for n, call, total, before, between, after, trip in outside]
        print(format_rows(head, body, args.markdown))
        return 0
    if args.ranges and args.near is not None:
        print(f"Modelled speed-up on P cores, lowest and highest over {len(args.ranges) + 1} reports, apart where "
              f"the row's round trip was below {args.near:g} ns (near) and not (far) "
              f"({args.schedule}; memory bandwidth ignored).")
        print(format_regimes(regimes, args.cores, args.markdown))
        targets = targets_text(args.cores)
        if targets:
            def count(i):
                picked = [r[i] for r in regimes if is_resnet50(r[0])]
                return f"{sum(x[2] for x in picked)} of {sum(x[0] for x in picked)}"
            print(f"ResNet-50 rows reaching {targets}, one per report: near {count(1)}; far {count(2)}.")
        return 0
    if args.ranges:
        print(f"Modelled speed-up on P cores, lowest and highest over {len(args.ranges) + 1} reports "
              f"({args.schedule}; memory bandwidth ignored).")
        print(format_ranges(ranges, args.cores, args.markdown))
        targets = targets_text(args.cores)
        if targets:
            trip = lambda t: f" (round trip {t[0]:.0f} ns)" if t else ""  # noqa: E731
            print(f"ResNet-50 rows reaching {targets}: " +
                  "; ".join(f"{path}: {k} of {n}{trip(t)}" for path, (k, n), t in counts) + ".")
        return 0
    how = {"greedy": "each task to the core free first", "waves": "tasks in waves of P"}[args.schedule]
    thread = report.get("task_thread", "caller")
    where = {"caller": "on the calling thread", "worker": "on a thread of the timing runner's own"}.get(
        thread, f"on the {thread!r} thread")
    split = f"; what-if: each task as {args.split} of 1/{args.split} its time" if args.split > 1 else ""
    print(f"Modelled speed-up on P cores from serially timed tasks, {where} "
          f"({how}; memory bandwidth ignored{split}).")
    print(format_table(table, args.cores, args.markdown))
    for note in (disturbance(report), round_trip_line(report)):
        if note:
            print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
