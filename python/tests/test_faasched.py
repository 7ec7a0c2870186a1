"""The Python package against the command line it wraps: the same files,
the same errors, and runs that leave other Python threads free."""

import os
import subprocess
import threading

import pandas as pd
import pytest

import faasched

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def cli():
    """The `faasched` binary `cargo test` or `cargo build` left, if any:
    FAASCHED_CLI names it (CI sets it, so there the comparison runs)."""
    path = os.environ.get("FAASCHED_CLI")
    if path:
        return path
    for profile in ("release", "debug"):
        candidate = os.path.join(ROOT, "target", profile, "faasched")
        if os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("no faasched binary: build it, or set FAASCHED_CLI")


def test_the_default_run_is_the_commands_default_run():
    summary = faasched.simulate()
    assert list(summary["policy"].unique()) == ["cfs", "sfs", "alps", "gittins", "srpt"]
    assert faasched.DEFAULT_POLICIES == ["cfs", "sfs", "alps", "gittins", "srpt"]
    means = summary[(summary["group"] == "all") & (summary["metric"] == "turnaround")]
    means = dict(zip(means["policy"], means["mean_ms"]))
    assert means["srpt"] < means["alps"] < means["cfs"]


def test_summary_is_the_commands_summary_csv_byte_for_byte(tmp_path):
    args = ["-w", "azure", "-c", "4", "-n", "2000", "-p", "cfs,sfs,srpt", "-s", "7"]
    subprocess.run([cli(), "simulate", *args, "--out", str(tmp_path / "cli")],
                   check=True, capture_output=True)
    faasched.simulate("azure", ["cfs", "sfs", "srpt"], cores=4, invocations=2000, seed=7,
                      out=str(tmp_path / "py"))
    for name in ("summary.csv", "summary.json", "invocations.csv"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name


def test_the_invocations_table_has_a_row_per_invocation_and_policy():
    summary, invocations = faasched.simulate(
        "huawei", ["cfs", "srpt"], invocations=300, invocations_table=True)
    assert len(invocations) == 2 * 300
    assert set(invocations["policy"]) == {"cfs", "srpt"}
    assert summary["count"].max() == 300


def test_same_seed_same_frame_another_seed_another():
    a = faasched.simulate(policies=["cfs"], invocations=500, seed=3)
    b = faasched.simulate(policies=["cfs"], invocations=500, seed=3)
    c = faasched.simulate(policies=["cfs"], invocations=500, seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_errors_are_the_commands_messages():
    with pytest.raises(faasched.FaaschedError, match="no-such-workload") as e:
        faasched.simulate("no-such-workload")
    assert "huawei" in str(e.value)
    with pytest.raises(faasched.FaaschedError, match="cfss"):
        faasched.simulate(policies=["cfss"], invocations=10)
    with pytest.raises(faasched.FaaschedError, match="cores 0: give 1 to 256"):
        faasched.simulate(cores=0)
    with pytest.raises(faasched.FaaschedError, match="above 0"):
        faasched.simulate(load=-1.0)
    with pytest.raises(ValueError, match="must be at least 1"):
        faasched.simulate(invocations=0)


def test_a_generated_workload_reads_back_and_simulates(tmp_path):
    path = tmp_path / "w.csv"
    frame = faasched.generate("huawei", cores=4, load=0.8, invocations=200, seed=2, out=str(path))
    assert len(frame) == 200
    pd.testing.assert_frame_equal(faasched.read_workload(str(path)), frame)
    summary = faasched.simulate(str(path), ["cfs"], cores=4)
    assert summary["count"].max() == 200


def test_a_bad_workload_row_is_named_by_file_line_and_field(tmp_path):
    path = tmp_path / "bad.csv"
    faasched.generate(invocations=3, out=str(path))
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[2].split(",")
    cells[header.index("arrival_us")] = "soon"
    lines[2] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(faasched.FaaschedError) as e:
        faasched.read_workload(str(path))
    message = str(e.value)
    assert "bad.csv" in message and ":3" in message and "arrival_us" in message, message


def test_a_run_leaves_other_python_threads_free():
    done = threading.Event()

    def run():
        faasched.simulate("huawei", ["cfs", "sfs", "alps"], invocations=200_000)
        done.set()

    worker = threading.Thread(target=run)
    worker.start()
    spins = 0
    while not done.is_set() and worker.is_alive():
        spins += 1
    worker.join()
    assert done.is_set()
    # Held, the GIL would stop this thread for the whole run.
    assert spins > 10_000, spins


def test_runs_in_threads_at_once_give_what_they_give_one_by_one():
    from concurrent.futures import ThreadPoolExecutor

    seeds = [1, 2, 3, 4]
    one_by_one = [faasched.simulate(policies=["cfs", "alps"], invocations=3000, seed=s)
                  for s in seeds]
    with ThreadPoolExecutor(max_workers=4) as pool:
        at_once = list(pool.map(
            lambda s: faasched.simulate(policies=["cfs", "alps"], invocations=3000, seed=s),
            seeds))
    for a, b in zip(one_by_one, at_once):
        pd.testing.assert_frame_equal(a, b)


def test_the_cluster_summary_is_the_commands_byte_for_byte(tmp_path):
    args = ["--servers", "4", "--cores", "4", "--seconds", "60", "-p", "ch-rlu,least-loaded"]
    subprocess.run([cli(), "cluster", "simulate", *args, "--out", str(tmp_path / "cli")],
                   check=True, capture_output=True)
    summary = faasched.simulate_cluster(policies=["ch-rlu", "least-loaded"], servers=4,
                                        cores=4, seconds=60, out=str(tmp_path / "py"))
    assert list(summary["policy"]) == ["ch-rlu", "least-loaded"]
    for name in ("summary.csv", "summary.json"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert faasched.DEFAULT_ROUTERS[0] == "ch-rlu"
    with pytest.raises(faasched.FaaschedError, match="chrlu"):
        faasched.simulate_cluster(policies=["chrlu"], seconds=1)


def test_the_node_summary_is_the_commands_byte_for_byte(tmp_path):
    args = ["-w", "bimodal-high", "-n", "3000", "--load", "0.7,0.9", "-p", "sledgescale,rr"]
    subprocess.run([cli(), "node", "simulate", *args, "--out", str(tmp_path / "cli")],
                   check=True, capture_output=True)
    summary = faasched.simulate_node("bimodal-high", ["sledgescale", "rr"], requests=3000,
                                     load=[0.7, 0.9], out=str(tmp_path / "py"))
    assert set(summary["policy"]) == {"sledgescale", "rr"}
    assert summary["rate_rps"].nunique() == 2
    for name in ("summary.csv", "summary.json"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert faasched.DEFAULT_NODE_POLICIES[0] == "sledgescale"
    with pytest.raises(faasched.FaaschedError, match="at most 10"):
        faasched.simulate_node(load=11, requests=10)


FIXTURES = os.path.join(ROOT, "crates", "workload", "tests", "fixtures")


@pytest.mark.parametrize("kind, path, flags, call", [
    ("azure-2019", "azure2019", ["--minutes", "1..2", "--arrivals", "equidistant"],
     lambda p, out: faasched.import_azure_2019(p, minutes=(1, 2), arrivals="equidistant",
                                               out=out)),
    ("azure-2021", "azure2021/trace.csv", ["--seconds", "0..100000", "--functions", "2"],
     lambda p, out: faasched.import_azure_2021(p, seconds="0..100000", functions=2, out=out)),
    ("huawei-2023", "huawei2023", ["--days", "0..1", "--load", "0.5", "--cores", "2"],
     lambda p, out: faasched.import_huawei_2023(p, days=(0, 1), load=0.5, cores=2, out=out)),
])
def test_an_imported_trace_is_the_commands_workload_byte_for_byte(tmp_path, kind, path,
                                                                    flags, call):
    path = os.path.join(FIXTURES, path)
    subprocess.run([cli(), "workload", "import", kind, path, *flags,
                    "-o", str(tmp_path / "cli.csv")], check=True, capture_output=True)
    frame = call(path, str(tmp_path / "py.csv"))
    assert (tmp_path / "py.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()
    assert len(frame) > 0
    assert list(frame.columns) == list(faasched.read_workload(str(tmp_path / "py.csv")).columns)


def test_an_import_refuses_what_its_command_refuses():
    path = os.path.join(FIXTURES, "azure2019")
    with pytest.raises(faasched.FaaschedError, match="expected one of uniform, equidistant"):
        faasched.import_azure_2019(path, arrivals="even")
    with pytest.raises(faasched.FaaschedError, match="needs the cores"):
        faasched.import_azure_2019(path, load=0.5)
    with pytest.raises(faasched.FaaschedError, match="minutes: `x`"):
        faasched.import_azure_2019(path, minutes="x..3")
    with pytest.raises(faasched.FaaschedError, match="no durations|no invocations"):
        faasched.import_azure_2019(path, minutes=(1000, 1001))


def test_a_capacity_search_is_the_commands_byte_for_byte(tmp_path):
    args = ["--workload", "fixed", "--workers", "1", "--requests", "2000", "--seeds", "2",
            "--policy", "sledgescale,rr", "--target", "p99.9-latency=1ms",
            "--max-dropped", "0.5%"]
    subprocess.run([cli(), "node", "capacity", *args, "--out", str(tmp_path / "cli")],
                   check=True, capture_output=True)
    summary = faasched.node_capacity("p99.9-latency=1ms", "fixed", ["sledgescale", "rr"],
                                     workers=1, requests=2000, seeds=2, max_dropped="0.5%",
                                     out=str(tmp_path / "py"))
    assert list(summary["policy"]) == ["sledgescale", "rr"]
    for name in ("summary.csv", "summary.json"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert faasched.DEFAULT_CAPACITY_POLICIES == ["sledgescale", "darc", "shinjuku"]
    with pytest.raises(faasched.FaaschedError, match="target"):
        faasched.node_capacity("p99.9-speed=1", requests=100)
    with pytest.raises(faasched.FaaschedError, match="--seeds 1001: give 1 to 1000"):
        faasched.node_capacity("p99-latency=1ms", requests=100, seeds=1001)
