use super::*;
use crate::sys::clock::{monotonic, thread_cpu};
use faasched_model::MS;

#[test]
fn names_parse_and_match_serde() {
    for kind in Kind::ALL {
        assert_eq!(kind.name().parse::<Kind>(), Ok(kind));
        assert_eq!(
            serde_json::to_string(&kind).unwrap(),
            format!("{:?}", kind.name())
        );
        assert!(kind.sweep().is_sorted());
        assert!(kind.default_n() <= kind.max_n());
    }
    let e = "fibonacci".parse::<Kind>().unwrap_err().to_string();
    assert!(
        e.contains("\"fibonacci\"") && e.contains("fib, bfs, mst, pagerank, features, float, io"),
        "{e}"
    );
}

#[test]
fn workload_functions_map_by_prefix() {
    for (name, kind) in [
        ("fib-3", Kind::Fib),
        ("cpu-4", Kind::Fib),
        ("bfs-2", Kind::Bfs),
        ("mst-1", Kind::Mst),
        ("pr-4", Kind::Pagerank),
        ("fe-6", Kind::Features),
        ("fo-2", Kind::Float),
        ("io-1", Kind::Io),
        ("pagerank", Kind::Pagerank),
        ("fib", Kind::Fib),
        ("9a3f0c1d", Kind::Float),
        ("9a3f0c1d-2", Kind::Float),
        ("fixed", Kind::Float),
        ("fibx-1", Kind::Float),
        ("", Kind::Float),
    ] {
        assert_eq!(Kind::for_function(name), kind, "{name}");
    }
}

#[test]
fn a_wait_leaves_the_cpu() {
    let (wall, cpu) = (monotonic(), thread_cpu());
    execute(Kind::Float, &"u1;i20000;u1".parse().unwrap());
    let (wall, cpu) = (monotonic() - wall, thread_cpu() - cpu);
    assert!(wall >= 20 * MS, "wall {wall} ns");
    assert!(cpu < 5 * MS, "cpu {cpu} ns during a 20 ms wait");
}

/// `uN` does N units of work, each the same: what a plan's length in
/// units means, pinned by the work's own result rather than by its CPU time
/// (how long a unit takes is `fn calibrate`'s to measure, not a test's).
#[test]
fn checksums_depend_on_the_work() {
    for kind in Kind::ALL {
        let one = execute(kind, &"u1".parse().unwrap());
        assert_eq!(kind.unit(), one, "{kind}");
        assert_ne!(one, 0, "{kind}");
        assert_eq!(
            execute(kind, &"u3".parse().unwrap()),
            one.wrapping_mul(3),
            "{kind}"
        );
        assert_eq!(execute(kind, &Plan::default()), 0, "{kind}");
    }
    assert_ne!(Kind::Bfs.run(500), Kind::Bfs.run(501));
}
