"""The papers' experiments from Python, here and swept on a Dask
LocalCluster, against the command line's own run: the same bytes."""

import json
import os
import subprocess
import sys

import pytest

import faasched
from test_faasched import cli

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """Two worker processes: each case crosses a process boundary both
    ways, as on a real cluster."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


def files(root):
    """Every file under ``root``, by path below it."""
    found = {}
    for here, _, names in os.walk(root):
        for name in names:
            path = os.path.join(here, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def experiment_cli(*args):
    return subprocess.run([cli(), "experiment", *args], check=True, capture_output=True,
                          text=True).stdout


def small_node_cases():
    """sledgescale-lognormal's plan, edited to a short run at two loads."""
    cases = faasched.plan("sledgescale-lognormal")
    for case in cases:
        case["options"]["seconds"] = 0.2
        case["offered"]["loads"] = [0.5, 0.9]
    return cases


def test_the_plan_is_the_commands_plan():
    assert faasched.plan("alps-load", invocations=500, seed=2) == json.loads(
        experiment_cli("alps-load", "--plan", "-n", "500", "-s", "2"))


def test_a_dask_sweep_writes_the_local_runs_bytes(tmp_path, client):
    experiment_cli("hybrid-cost", "-n", "400", "-s", "5", "--out", str(tmp_path / "cli"))
    table = faasched.experiment("hybrid-cost", invocations=400, seed=5,
                                out=str(tmp_path / "dask"), client=client)
    here, there = files(tmp_path / "cli"), files(tmp_path / "dask")
    assert sorted(here) == sorted(there)
    assert len(here) > 3
    for name in here:
        assert here[name] == there[name], name
    assert list(table["case"].dropna().unique())[0] in {c["slug"] for c in
                                                       faasched.plan("hybrid-cost")}


def test_edited_cases_sweep_as_the_command_runs_them(tmp_path, client):
    cases = small_node_cases()
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    printed = experiment_cli("sledgescale-lognormal", "--cases", str(path),
                             "--out", str(tmp_path / "cli"))
    swept = faasched.experiment("sledgescale-lognormal", cases=cases,
                                out=str(tmp_path / "dask"), client=client)
    assert files(tmp_path / "cli") == files(tmp_path / "dask")
    here = faasched.experiment("sledgescale-lognormal", cases=str(path))
    assert swept.equals(here)
    assert printed.startswith(here.attrs["table"])
    assert "wrote" not in here.attrs["table"]


def test_the_commands_dask_flag_gives_its_local_bytes(tmp_path):
    env = dict(os.environ, FAASCHED_PYTHON=sys.executable)
    out = subprocess.run(
        [cli(), "experiment", "srpt-noise", "-n", "300", "--dask", "local",
         "--out", str(tmp_path / "dask")],
        check=True, capture_output=True, text=True, env=env).stdout
    printed = experiment_cli("srpt-noise", "-n", "300", "--out", str(tmp_path / "cli"))
    assert files(tmp_path / "cli") == files(tmp_path / "dask")
    assert out.replace(str(tmp_path / "dask"), "DIR") == printed.replace(
        str(tmp_path / "cli"), "DIR")


def test_a_workers_error_is_the_commands_message(tmp_path, client):
    cases = small_node_cases()
    cases[0]["policies"] = ["sledgescale", "sledgescal"]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    command = subprocess.run([cli(), "experiment", "sledgescale-lognormal", "--cases",
                              str(path)], capture_output=True, text=True)
    assert command.returncode != 0
    with pytest.raises(faasched.FaaschedError) as e:
        faasched.experiment("sledgescale-lognormal", cases=cases, client=client)
    assert "sledgescal" in str(e.value)
    assert command.stderr.strip() == f"error: {e.value}"


def test_settings_the_cases_already_say_are_refused():
    with pytest.raises(faasched.FaaschedError, match="refused with them"):
        faasched.experiment("alps-load", seed=3, cases=faasched.plan("alps-load"))
    with pytest.raises(faasched.FaaschedError, match="no experiment `alps-lod`"):
        faasched.plan("alps-lod")


def test_a_sweep_by_scheduler_address_from_the_shell_is_the_local_run(tmp_path, client):
    """`python -m faasched.sweep --scheduler ADDR`, as `--dask ADDR` runs it on a
    real cluster: connected by address, the same printout and files."""
    printed = experiment_cli("alps-ablation", "-n", "300", "--out", str(tmp_path / "cli"))
    swept = subprocess.run(
        [sys.executable, "-m", "faasched.sweep", "alps-ablation", "-n", "300", "--quiet",
         "--scheduler", client.scheduler.address, "--out", str(tmp_path / "dask")],
        check=True, capture_output=True, text=True).stdout
    assert swept.replace(str(tmp_path / "dask"), "DIR") == printed.replace(
        str(tmp_path / "cli"), "DIR")
    assert files(tmp_path / "cli") == files(tmp_path / "dask")
