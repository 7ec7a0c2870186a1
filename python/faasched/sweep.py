"""An experiment's cases run on a Dask cluster, one task a case.

The experiment's cases are data (``faasched experiment NAME --plan``):
each is sent to a Dask worker as its JSON line, measured there by
faasched's own code (every job of the case on that worker's cores) and
sent back as bytes that name the faasched version, the experiment and the
case; the table and every file are then made here by the code a local
run uses, so they are the local run's, byte for byte. Every worker needs
the same faasched version installed (``pip install ./python``) and, for
``alps-real``, the trace at the same path.

``run`` does it on Dask; ``case_lines``, ``measure`` and ``finish`` are the
three steps on any engine (docs/PYTHON.md has Ray's). From the shell
(``faasched experiment NAME --dask ADDR`` runs this)::

    python -m faasched.sweep hybrid-cost --scheduler local --out results
    python -m faasched.sweep alps-load --scheduler tcp://10.0.0.5:8786

Dask is needed only here: ``pip install 'dask[distributed]'``.
"""

import argparse
import contextlib
import sys
from typing import Optional

from . import FaaschedError, _call, _cases_text, _native


def case_lines(name: str, invocations: Optional[int] = None, seed: int = 1,
               trace: Optional[str] = None, cases=None, out: Optional[str] = None):
    """The experiment's cases to send out, a JSON line each: its own, or
    ``cases`` (a cases file's path or a list as ``faasched.plan`` gives
    it). With ``out``, that directory is made now, so that one that
    cannot be made is found before anything runs."""
    return _call(_native.experiment_cases, name, invocations=invocations, seed=seed,
                 trace=trace, cases=_cases_text(cases), out=out)


def measure(name: str, case: str) -> bytes:
    """Measures one of ``case_lines``' lines where it is called (every job of
    the case on that machine's cores): the bytes ``finish`` takes."""
    return _call(_native.experiment_measure, name, case)


def finish(name: str, lines, measured, out: Optional[str] = None) -> str:
    """The experiment's table from ``measure``'s bytes for each of
    ``lines``, in their order, with its files written into ``out`` if
    given; what ``faasched experiment`` prints. Bytes of another faasched
    version, experiment or case are refused."""
    return _call(_native.experiment_finish, name, list(lines), list(measured), out=out)


@contextlib.contextmanager
def _client(client, workers=None):
    """A ``distributed.Client`` for ``client``: itself if it is one; for
    ``"local"``, a LocalCluster on this machine (``workers`` processes, by
    default Dask's choice), closed afterwards; else the scheduler at that
    address, the connection closed afterwards."""
    try:
        import distributed
    except ImportError:
        raise FaaschedError(
            "a sweep on Dask needs dask.distributed: pip install 'dask[distributed]'"
        ) from None
    if isinstance(client, distributed.Client):
        yield client
        return
    if client == "local":
        with distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, dashboard_address=None
        ) as cluster, distributed.Client(cluster) as c:
            yield c
        return
    try:
        c = distributed.Client(client, timeout="30s")
    except (OSError, TimeoutError, ValueError) as e:
        raise FaaschedError(f"the Dask scheduler at {client}: {e}") from None
    with c:
        yield c


def run(
    name: str,
    *,
    client,
    invocations: Optional[int] = None,
    seed: int = 1,
    trace: Optional[str] = None,
    cases=None,
    out: Optional[str] = None,
    workers: Optional[int] = None,
    progress: bool = False,
) -> str:
    """Runs experiment ``name``'s cases (its own, or ``cases``: a cases
    file's path or a list of cases as ``faasched.plan`` gives them) on the
    Dask cluster of ``client`` (a ``distributed.Client``, a scheduler
    address, or ``"local"``), a task a case, and writes its files into
    ``out`` if given; what ``faasched experiment`` prints. ``progress``
    counts the finished cases on stderr."""
    lines = case_lines(name, invocations, seed, trace, cases=cases, out=out)
    with _client(client, workers) as c:
        import distributed

        futures = c.map(measure, [name] * len(lines), lines)
        if progress:
            for done, _ in enumerate(distributed.as_completed(futures), 1):
                sys.stderr.write(f"\r     sweep {done}/{len(lines)} cases")
                sys.stderr.flush()
            sys.stderr.write("\n")
        measured = c.gather(futures)
    return finish(name, lines, measured, out)


def main(argv=None) -> int:
    """``python -m faasched.sweep``: the experiment's table on stdout, as
    ``faasched experiment`` prints it; an error on stderr and exit 1."""
    p = argparse.ArgumentParser(
        prog="python -m faasched.sweep",
        description="Run a faasched experiment's cases on a Dask cluster: a task a "
        "case, the table and files byte for byte a local run's.",
    )
    p.add_argument("name", choices=_native.EXPERIMENTS, metavar="NAME",
                   help="the experiment (faasched experiment --help lists them)")
    p.add_argument("--scheduler", required=True, metavar="ADDR",
                   help="the Dask scheduler's address (tcp://host:8786), or `local` "
                   "for a LocalCluster on this machine")
    p.add_argument("--workers", type=int, metavar="N",
                   help="worker processes of a local cluster (by default Dask's choice)")
    p.add_argument("-o", "--out", metavar="DIR",
                   help="write table.txt, table.csv, report.html and a summary per case here")
    p.add_argument("-n", "--invocations", type=int, metavar="N",
                   help="invocations per run instead of the experiment's own")
    p.add_argument("-s", "--seed", type=int, metavar="SEED",
                   help="seed of every workload and random choice (default 1)")
    p.add_argument("--trace", metavar="DIR", help="the Azure 2019 day, for alps-real")
    p.add_argument("--cases", metavar="FILE",
                   help="run the cases in this JSON file (as --plan prints them)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    a = p.parse_args(argv)
    if a.workers is not None and a.scheduler != "local":
        p.error("--workers is for --scheduler local")
    if a.cases and (a.invocations, a.seed, a.trace) != (None, None, None):
        p.error("--cases FILE says every workload's size, seed and trace: "
                "--invocations, --seed and --trace are refused with it")
    try:
        text = run(
            a.name,
            client=a.scheduler,
            invocations=a.invocations,
            seed=1 if a.seed is None else a.seed,
            trace=a.trace,
            cases=a.cases,
            out=a.out,
            workers=a.workers,
            progress=not a.quiet and sys.stderr.isatty(),
        )
    except FaaschedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
