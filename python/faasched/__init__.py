"""faasched from Python: the simulators, the workload generators and
readers, the papers' experiments (here or swept on a Dask cluster),
results as pandas DataFrames.

Each function runs what the `faasched` command of the same name runs
(the same code, the same defaults, the same seed giving the same
numbers) and reads the files that command writes: a DataFrame has the
columns of its summary.csv or invocations.csv. An error raises
``FaaschedError`` (a ``ValueError``) with the message the command
prints. The simulation runs without the GIL held.

    >>> import faasched
    >>> faasched.simulate().head()
"""

import contextlib
import json
import os
import tempfile
from typing import Optional, Sequence

import pandas as pd

from . import _native

__all__ = [
    "DEFAULT_CAPACITY_POLICIES",
    "DEFAULT_NODE_POLICIES",
    "DEFAULT_POLICIES",
    "DEFAULT_ROUTERS",
    "EXPERIMENTS",
    "FaaschedError",
    "experiment",
    "generate",
    "import_azure_2019",
    "import_azure_2021",
    "import_huawei_2023",
    "node_capacity",
    "plan",
    "read_workload",
    "simulate",
    "simulate_cluster",
    "simulate_node",
]

#: The policies ``simulate`` runs unless told, as ``faasched simulate`` does.
DEFAULT_POLICIES = list(_native.DEFAULT_POLICIES)

#: The policies ``simulate_node`` runs unless told, as ``faasched node
#: simulate`` does.
DEFAULT_NODE_POLICIES = list(_native.DEFAULT_NODE_POLICIES)

#: The routers ``simulate_cluster`` runs unless told, as ``faasched cluster
#: simulate`` does.
DEFAULT_ROUTERS = list(_native.DEFAULT_ROUTERS)

#: The policies ``node_capacity`` searches unless told otherwise, as
#: ``faasched node capacity`` does.
DEFAULT_CAPACITY_POLICIES = list(_native.DEFAULT_CAPACITY_POLICIES)

#: The experiments ``experiment`` runs, as ``faasched experiment`` names them.
EXPERIMENTS = list(_native.EXPERIMENTS)

__version__ = _native.VERSION


class FaaschedError(ValueError):
    """What the command would print after ``error:``."""


@contextlib.contextmanager
def _target(out, name):
    """Where a command writes: ``out`` if given, else ``name`` in a
    temporary directory removed once the frame is read."""
    if out is not None:
        yield out
        return
    with tempfile.TemporaryDirectory(prefix="faasched-") as tmp:
        yield os.path.join(tmp, name)


def _call(native, *args, **kwargs):
    try:
        return native(*args, **kwargs)
    except ValueError as e:
        raise FaaschedError(str(e)) from None


def simulate(
    workload: str = "huawei",
    policies: Optional[Sequence[str]] = None,
    cores: Optional[int] = None,
    load: Optional[float] = None,
    invocations: Optional[int] = None,
    seed: int = 1,
    *,
    invocations_table: bool = False,
    out: Optional[str] = None,
):
    """``faasched simulate``: a workload through the simulated kernel under
    each policy.

    ``workload`` is a built-in (``huawei``, ``azure``, ``lognormal``, ...)
    or a workload CSV file; ``cores`` defaults to 8 and a built-in's
    ``load`` to 0.9, ``invocations`` to 15,000 of a built-in and all of a
    file. Returns summary.csv as a DataFrame (one row per policy, group
    and metric); with ``invocations_table=True``, the pair (summary,
    invocations.csv). With ``out``, the command's files stay in that
    directory (summary.json, report.html too).
    """
    policies = list(DEFAULT_POLICIES if policies is None else policies)
    with _target(out, "run") as target:
        _call(
            _native.simulate,
            target,
            workload,
            policies,
            cores=cores,
            load=load,
            invocations=invocations,
            seed=seed,
        )
        summary = pd.read_csv(os.path.join(target, "summary.csv"))
        if not invocations_table:
            return summary
        return summary, pd.read_csv(os.path.join(target, "invocations.csv"))


def _floats(x):
    if x is None:
        return []
    if isinstance(x, (int, float)):
        return [float(x)]
    return [float(v) for v in x]


def simulate_node(
    workload: str = "exponential",
    policies: Optional[Sequence[str]] = None,
    workers: int = 6,
    dispatchers: int = 1,
    rate=None,
    load=None,
    seconds: float = 10.0,
    requests: Optional[int] = None,
    seed: int = 1,
    *,
    out: Optional[str] = None,
):
    """``faasched node simulate``: a request workload through the simulated
    node under each policy, at each offered ``rate`` (requests/s) or
    ``load`` (a fraction of the workers' capacity; 0.8 with neither), a
    number or a list of them. ``workload`` is a built-in (``exponential``,
    ``bimodal-high``, ``sd-vbs``, ``colocated``, ...) or a request CSV.
    Returns summary.csv as a DataFrame, a row per policy, rate and scope
    (all requests, then each function).
    """
    policies = list(DEFAULT_NODE_POLICIES if policies is None else policies)
    with _target(out, "run") as target:
        _call(
            _native.simulate_node,
            target,
            workload,
            policies,
            workers,
            dispatchers,
            _floats(rate),
            _floats(load),
            seconds,
            requests,
            seed,
        )
        return pd.read_csv(os.path.join(target, "summary.csv"))


def node_capacity(
    target: str,
    workload: str = "exponential",
    policies: Optional[Sequence[str]] = None,
    workers: int = 6,
    dispatchers: int = 1,
    seconds: float = 10.0,
    requests: Optional[int] = None,
    seed: int = 1,
    *,
    max_dropped: Optional[str] = None,
    seeds: Optional[int] = None,
    precision: Optional[float] = None,
    min_requests: Optional[int] = None,
    out: Optional[str] = None,
):
    """``faasched node capacity``: per policy, the highest offered rate at
    which the simulated node meets ``target`` (``"p99.9-slowdown=10"``,
    ``"p99-latency=5ms"``, ``"miss-rate=1%"``, ...), the median over
    ``seeds`` seeds. Returns summary.csv as a DataFrame, a row per policy
    (``policies=None`` is ``faasched.DEFAULT_CAPACITY_POLICIES``). The
    search's settings left out are the command's defaults: ``max_dropped``
    (a percentage, ``"0.1%"``), ``seeds`` (3), ``precision`` (0.02) and
    ``min_requests`` (20,000).
    """
    policies = list(DEFAULT_CAPACITY_POLICIES if policies is None else policies)
    with _target(out, "capacity") as target_dir:
        _call(
            _native.node_capacity,
            target_dir,
            target,
            workload,
            policies,
            workers,
            dispatchers,
            seconds,
            requests,
            seed,
            max_dropped=max_dropped,
            seeds=seeds,
            precision=precision,
            min_requests=min_requests,
        )
        return pd.read_csv(os.path.join(target_dir, "summary.csv"))


def simulate_cluster(
    workload: str = "azure-functions",
    policies: Optional[Sequence[str]] = None,
    servers: int = 8,
    cores: int = 16,
    memory_gb: float = 32.0,
    load: float = 0.7,
    seconds: float = 600.0,
    invocations: Optional[int] = None,
    seed: int = 1,
    keep_alive: str = "greedy-dual",
    *,
    out: Optional[str] = None,
):
    """``faasched cluster simulate``: invocations through a simulated
    cluster under each router (``ROUTER:KEEP-ALIVE`` for one with its own
    keep-alive policy). ``workload`` is ``azure-functions``,
    ``functionbench``, ``functionbench-bursts``, ``functionbench-rising`` or
    a workload CSV. Returns summary.csv as a DataFrame, a row per router;
    with ``out``, the command's files stay there (timing.json holds the
    routers' decision times on this machine, the one file that differs
    between runs of the same seed).
    """
    policies = list(DEFAULT_ROUTERS if policies is None else policies)
    with _target(out, "run") as target:
        _call(
            _native.simulate_cluster,
            target,
            workload,
            policies,
            servers,
            cores,
            memory_gb,
            load,
            seconds,
            invocations,
            seed,
            keep_alive,
        )
        return pd.read_csv(os.path.join(target, "summary.csv"))


def generate(
    workload: str = "huawei",
    cores: int = 56,
    load: float = 0.9,
    invocations: int = 15000,
    seed: int = 1,
    *,
    out: Optional[str] = None,
):
    """``faasched workload generate``: a built-in workload as a workload
    CSV, returned as a DataFrame (written to ``out`` too, if given)."""
    with _target(out, "workload.csv") as target:
        _call(_native.generate, target, workload, cores, load, invocations, seed=seed)
        return pd.read_csv(target)


def _range(x):
    """A range option as its flag's text: ``"540..690"`` or ``7`` as given,
    a pair ``(a, b)`` as ``"a..b"``."""
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, (tuple, list)) and len(x) == 2:
        return f"{x[0]}..{x[1]}"
    return str(x)


def _import(kind, path, out, *, day=1, days="0", minutes=None, seconds=None,
            arrivals="uniform", functions=None, seed=1, load=None, cores=None):
    with _target(out, "workload.csv") as target:
        _call(_native.import_trace, target, kind, os.fspath(path), day, _range(days),
              _range(minutes), _range(seconds), arrivals, functions, seed, load, cores)
        return pd.read_csv(target)


def import_azure_2019(
    dir: str,
    day: int = 1,
    minutes=None,
    arrivals: str = "uniform",
    functions: Optional[int] = None,
    seed: int = 1,
    load: Optional[float] = None,
    cores: Optional[int] = None,
    *,
    out: Optional[str] = None,
):
    """``faasched workload import azure-2019 DIR``: one day of the Azure
    Functions 2019 trace as a workload CSV, returned as a DataFrame
    (written to ``out`` too, if given). ``minutes`` keeps some of the
    day's minutes, 1-based and inclusive (``"540..690"`` or ``(540,
    690)``; by default every minute the invocations file has);
    ``arrivals`` places a minute's invocations in it (``uniform``,
    ``equidistant`` or ``poisson``); ``functions`` samples that many with
    ``seed``; ``load`` rescales the arrivals to that load on ``cores``.
    The command's summary line goes to stderr."""
    return _import("azure-2019", dir, out, day=day, minutes=minutes, arrivals=arrivals,
                   functions=functions, seed=seed, load=load, cores=cores)


def import_azure_2021(
    file: str,
    seconds=None,
    functions: Optional[int] = None,
    seed: int = 1,
    load: Optional[float] = None,
    cores: Optional[int] = None,
    *,
    out: Optional[str] = None,
):
    """``faasched workload import azure-2021 FILE``: the Azure Functions
    2021 trace as a workload CSV, returned as a DataFrame. ``seconds``
    keeps the invocations starting in a half-open window of trace seconds
    (``"0..3600"`` or ``(0, 3600)``); the rest as
    ``import_azure_2019``."""
    return _import("azure-2021", file, out, seconds=seconds, functions=functions,
                   seed=seed, load=load, cores=cores)


def import_huawei_2023(
    dir: str,
    days="0",
    minutes=None,
    arrivals: str = "uniform",
    functions: Optional[int] = None,
    seed: int = 1,
    load: Optional[float] = None,
    cores: Optional[int] = None,
    *,
    out: Optional[str] = None,
):
    """``faasched workload import huawei-2023 DIR``: the Huawei 2023
    release's per-minute metrics as a workload CSV, returned as a
    DataFrame. ``days`` are the day files' numbers, inclusive (``1``,
    ``"1..3"`` or ``(1, 3)``); ``minutes`` keeps some minutes of them,
    1-based and inclusive; the rest as ``import_azure_2019``."""
    return _import("huawei-2023", dir, out, days=days, minutes=minutes, arrivals=arrivals,
                   functions=functions, seed=seed, load=load, cores=cores)


def read_workload(path: str):
    """A workload CSV as ``simulate`` reads it: every row checked (an error
    names the file, the line and the field), then as a DataFrame."""
    _call(_native.check_workload, path)
    return pd.read_csv(path)


def _cases_text(cases):
    """A cases file's text from ``cases``: a path to one, or a list of
    cases (``plan``'s dicts, edited); ``None`` for the experiment's own."""
    if cases is None:
        return None
    if isinstance(cases, (str, os.PathLike)):
        try:
            with open(cases, encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise FaaschedError(f"reading {os.fspath(cases)}: {e.strerror}") from None
    return json.dumps(list(cases))


def plan(name: str, invocations: Optional[int] = None, seed: int = 1,
         trace: Optional[str] = None):
    """``faasched experiment NAME --plan``: the experiment's cases, a dict
    each, to edit and give back to ``experiment(cases=...)``."""
    lines = _call(_native.experiment_cases, name, invocations=invocations, seed=seed,
                  trace=trace)
    return [json.loads(line) for line in lines]


def experiment(
    name: str,
    invocations: Optional[int] = None,
    seed: Optional[int] = None,
    trace: Optional[str] = None,
    *,
    cases=None,
    out: Optional[str] = None,
    client=None,
):
    """``faasched experiment NAME``: a paper's experiment, its table.csv
    as a DataFrame (the printed table in ``.attrs["table"]``); with
    ``out``, table.txt, report.html and a summary per case stay there.

    ``cases`` runs these instead of the experiment's own: a cases file's
    path, or a list as ``plan`` gives it (they say every workload's size,
    seed and trace, so ``invocations``, ``seed`` and ``trace`` are refused
    with them). With ``client`` (a ``distributed.Client``, a Dask
    scheduler's address, or ``"local"`` for a LocalCluster), the cases run
    on that Dask cluster, a task each; the table and files are the same
    bytes as here (``faasched.sweep`` says what the workers need).
    """
    if cases is not None and (invocations, seed, trace) != (None, None, None):
        raise FaaschedError(
            "cases say every workload's size, seed and trace: invocations, seed and "
            "trace are refused with them"
        )
    seed = 1 if seed is None else seed
    with _target(out, "experiment") as target:
        if client is None:
            lines = _call(_native.experiment_cases, name, invocations=invocations,
                          seed=seed, trace=trace, cases=_cases_text(cases), out=target)
            text = _call(_native.experiment_run, name, lines, out=target)
        else:
            from . import sweep

            text = sweep.run(name, client=client, invocations=invocations, seed=seed,
                             trace=trace, cases=cases, out=target)
        table = pd.read_csv(os.path.join(target, "table.csv"))
        if out is None:
            # The files went to a temporary directory: the printout's
            # last line, which names it, is not the caller's.
            text = text[: text.rfind("wrote table.txt")]
        table.attrs["table"] = text
        return table
