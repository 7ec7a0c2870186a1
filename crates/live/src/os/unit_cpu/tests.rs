use super::*;
use faasched_model::MS;

/// A calibration made by hand: every unit 40 µs but fib's 50 µs, startup 1 ms.
fn hand_made() -> Calibration {
    let mut c = Calibration {
        id: String::new(),
        created: 1_700_000_000,
        build: "0.1.0 test".into(),
        machine: Machine {
            hostname: "here".into(),
            cpu_model: "a CPU".into(),
            cores: 2,
            kernel: "6.18".into(),
        },
        neighbours: 0,
        startup_ns: MS,
        functions: Kind::ALL
            .map(|kind| FunctionCalibration {
                kind,
                unit_ns: if kind == Kind::Fib { 50 * US } else { 40 * US },
                points: vec![Point { n: 1, cpu_ns: 2 }],
            })
            .into(),
    };
    c.id = c.content_hash();
    c
}

#[test]
fn phases_become_units_less_the_startup() {
    let c = hand_made();
    let phases = [Phase::Cpu(12 * MS), Phase::Io(100 * MS), Phase::Cpu(MS)];
    // (12 ms - 1 ms startup) / 50 µs = 220; 1 ms / 50 µs = 20.
    assert_eq!(c.plan(Kind::Fib, &phases).to_string(), "u220;i100000;u20");
    // 11 ms / 40 µs = 275; 1 ms / 40 µs = 25.
    assert_eq!(c.plan(Kind::Io, &phases).to_string(), "u275;i100000;u25");
}

#[test]
fn units_round_to_the_nearest() {
    let c = hand_made();
    let units = |ns| c.plan(Kind::Float, &[Phase::Cpu(MS + ns)]).0;
    assert_eq!(units(19_999), vec![Step::Work(0)]);
    assert_eq!(units(20_000), vec![Step::Work(1)]);
    assert_eq!(units(59_999), vec![Step::Work(1)]);
    assert_eq!(units(60_000), vec![Step::Work(2)]);
}

#[test]
fn startup_comes_off_the_first_cpu_phase_only() {
    let c = hand_made();
    let phases = [Phase::Io(1_499), Phase::Cpu(MS / 2), Phase::Cpu(MS)];
    assert_eq!(c.plan(Kind::Float, &phases).to_string(), "i1;u0;u25");
    assert_eq!(c.plan(Kind::Float, &[]), Plan::default());
    let huge = c.plan(Kind::Float, &[Phase::Io(u64::MAX), Phase::Cpu(u64::MAX)]);
    let nearest = (u128::from(u64::MAX - MS) + 20_000) / 40_000;
    assert_eq!(huge.0[1], Step::Work(nearest as u64));
}

#[test]
fn file_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep/er/calibration.json");
    let c = hand_made();
    c.save(&path).unwrap();
    assert_eq!(Calibration::load(&path).unwrap(), c);
    assert_eq!(c.id.len(), 16);
    let other = Calibration {
        startup_ns: 2 * MS,
        ..c.clone()
    };
    assert_ne!(other.content_hash(), c.id);
}

#[test]
fn bad_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    let message = |path: &Path| Calibration::load(path).unwrap_err().to_string();
    let e = message(&path);
    assert!(e.starts_with(&path.display().to_string()), "{e}");
    fs::write(&path, "{}").unwrap();
    let e = message(&path);
    assert!(e.contains("c.json: not a faasched calibration"), "{e}");
    let mut c = hand_made();
    c.functions.retain(|f| f.kind != Kind::Mst);
    c.save(&path).unwrap();
    let e = message(&path);
    assert!(e.contains("c.json: no calibration of mst"), "{e}");
    c.functions = hand_made().functions;
    c.functions[0].unit_ns = 0;
    c.save(&path).unwrap();
    assert!(message(&path).contains("fib's unit takes no time"));
    let blocked = dir.path().join("c.json/inside.json");
    let e = c.save(&blocked).unwrap_err().to_string();
    assert!(e.contains("c.json"), "{e}");
}
