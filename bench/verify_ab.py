"""Verify's runs before and after the cuts of issue 34 (bench/README.md, "verify"), in one
process on one JVM, alternated file by file, two rounds: ``before`` puts back the earlier
plan of runs (a restart in every run, the ``one-batch`` one included, drawn over all
boundaries), the session's two shuffle partitions and each run analysing its queries
again; ``after`` is this checkout. Prints the wall and CPU time (the JVM's and Python's)
of each file's ``verify --splits 0 --seed 1 --no-shrink`` and the ratios.

    PYTHONPATH=$PWD .venv/bin/python bench/verify_ab.py examples/flights/hourly_delays.test.yaml …
"""

import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession

from sqlstream.testing import verify, verify_run
from sqlstream.testing.harness import Harness
from sqlstream.testing.suite import checkpoint_file_manager

spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
    .config("spark.driver.memory", "4g")
    .config(map=checkpoint_file_manager("4.3.0"))
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")

new_plan = verify.plan_runs
new_settings = verify.Verifier.settings


def old_plan(data, splits, seed, restarts=True):
    rng = random.Random(seed)
    ids = list(range(len(data.rows)))
    shapes = [("one-batch", [ids]), ("per-step", data.steps)]
    for n in range(1, splits + 1):
        parts = rng.randint(2, 5) if len(ids) > 1 else 1
        cuts = sorted(rng.sample(range(1, len(ids)), min(parts, len(ids)) - 1)) if ids else []
        edges = [0, *cuts, len(ids)]
        shapes.append((f"split-{n}", [ids[a:b] for a, b in zip(edges, edges[1:], strict=False)]))
    runs = []
    for name, batches in shapes:
        kept = tuple(tuple(b) for b in batches if b) or ((),)
        runs.append(verify.Run(name, kept, rng.randrange(len(kept))))
    return runs


orig_init = verify.Verifier.__init__


def go(path, variant):
    if variant == "before":
        verify_run.plan_runs = old_plan
        verify.Verifier.settings = lambda self: dict(self.data.settings)

        def init(self, *a, **k):
            orig_init(self, *a, **k)
            self._columns = None

        verify.Verifier.__init__ = init
    else:
        verify_run.plan_runs = new_plan
        verify.Verifier.settings = new_settings
        verify.Verifier.__init__ = orig_init
    tf, targets = verify_run.from_test(Path(path), {}, False)
    out = []
    for i, tg in enumerate(targets, 1):
        r = verify_run.verify(
            h, tg.pipeline, tg.data, 0, 1, Path(tempfile.mkdtemp()), tf, tg.name, i, False
        )
        out += [q.result for q in r.queries]
    return out


h = Harness(spark)
jpid = spark.sparkContext._gateway.proc.pid
tick = os.sysconf("SC_CLK_TCK")


def cpu():
    with open(f"/proc/{jpid}/stat") as stat:
        f = stat.read().rsplit(")", 1)[1].split()
    t = os.times()
    return (int(f[11]) + int(f[12])) / tick + t.user + t.system


files = sys.argv[1:]
go(files[0], "after")  # warm
tot = {v: [0.0, 0.0] for v in ("before", "after")}
for rnd in range(2):
    for f in files:
        order = ("before", "after") if (rnd + files.index(f)) % 2 == 0 else ("after", "before")
        for v in order:
            l0 = os.getloadavg()[0]
            c = cpu()
            t = time.monotonic()
            res = go(f, v)
            d = time.monotonic() - t
            c = cpu() - c
            tot[v][0] += d
            tot[v][1] += c
            print(
                f"{rnd} {v:6s} {f.split('/')[-1]:32s} wall {d:6.1f} cpu {c:6.1f} load {l0:4.1f} {sorted(set(res))}",
                flush=True,
            )
print({v: [round(x, 1) for x in t] for v, t in tot.items()})
print(
    f"ratio before/after: wall {tot['before'][0] / tot['after'][0]:.2f} cpu {tot['before'][1] / tot['after'][1]:.2f}"
)
