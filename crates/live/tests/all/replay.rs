//! The launcher against the real kernel: every invocation runs as a process
//! and finishes exactly once, and the attributes a policy asks for are the
//! ones the kernel applied (read back by the process itself with `chrt`).

use faasched_live::os::privilege;
use faasched_live::os::replay::{
    self, Config, DEFAULT_MAX_IN_FLIGHT, DEFAULT_OVERRUN, ReplayError,
};
use faasched_model::{
    Attrs, Class, CpuSet, Function, FunctionId, Invocation, MS, Nanos, Outcome, Phase, Phases,
    Steer, TaskId, TaskInfo, Time,
};
use std::collections::HashMap;
use std::convert::Infallible;
use std::ffi::OsString;
use std::path::Path;

/// Starts every task with `start`; with a watch, moves it to SCHED_OTHER
/// once it used that much CPU.
struct Demote {
    start: Attrs,
    watch: Option<Nanos>,
    fired: Vec<(TaskId, Nanos)>,
    started: Vec<TaskId>,
    exits: Vec<u64>,
}

impl Demote {
    fn new(class: Class, watch: Option<Nanos>) -> Demote {
        Demote {
            start: Attrs::normal(cpus()).with_class(class),
            watch,
            fired: Vec::new(),
            started: Vec::new(),
            exits: Vec::new(),
        }
    }
}

impl Steer for Demote {
    fn name(&self) -> &str {
        "demote"
    }
    fn on_arrival(&mut self, _now: Time, _task: &TaskInfo, _cpus: CpuSet) -> Attrs {
        self.start
    }
    fn on_start(&mut self, _now: Time, task: TaskId) -> Option<Attrs> {
        self.started.push(task);
        None
    }
    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        self.watch
            .filter(|_| !self.fired.iter().any(|f| f.0 == task))
    }
    fn on_cpu_used(&mut self, _now: Time, task: TaskId, used: Nanos) -> Option<Attrs> {
        self.fired.push((task, used));
        Some(Attrs::normal(cpus()))
    }
    fn on_exit(&mut self, _now: Time, task: TaskId, _o: &Outcome) {
        self.exits.push(task.0);
    }
}

fn cpus() -> CpuSet {
    CpuSet::first(1)
}

fn invocations(n: u64, gap: Nanos, cpu: Nanos) -> Vec<Result<Invocation, Infallible>> {
    (0..n)
        .map(|i| {
            Ok(Invocation {
                id: 10 + i,
                function: Function {
                    id: FunctionId(0),
                    name: "sh".into(),
                },
                arrival: 1_000 * MS + i * gap,
                phases: Phases::from_buf([Phase::Cpu(cpu)]),
                memory_mb: 128,
                deadline: None,
            })
        })
        .collect()
}

/// A shell that spins, then writes its own scheduling policy (as `chrt`
/// reads it from the kernel) to `dir/<invocation id>`.
fn spin_then_report(dir: &Path, loops: u32) -> impl FnMut(&Invocation) -> Vec<OsString> {
    let dir = dir.to_path_buf();
    move |inv| {
        let script = format!(
            "i=0; while [ $i -lt {loops} ]; do i=$((i+1)); done; chrt -p $$ > {}/{}",
            dir.display(),
            inv.id
        );
        vec!["-c".into(), script.into()]
    }
}

fn config() -> Config {
    Config {
        program: "/bin/sh".into(),
        cpus: cpus(),
        lead: 20 * MS,
        overrun: DEFAULT_OVERRUN,
        max_in_flight: DEFAULT_MAX_IN_FLIGHT,
    }
}

fn policy_of(dir: &Path, id: u64) -> String {
    std::fs::read_to_string(dir.join(id.to_string())).unwrap()
}

#[test]
fn every_invocation_runs_once_as_a_process_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = Demote::new(Class::Normal, None);
    let mut outcomes = Vec::new();
    let stats = replay::run(
        &config(),
        &mut policy,
        invocations(6, 30 * MS, MS),
        spin_then_report(dir.path(), 100),
        |o| outcomes.push(o),
    )
    .unwrap();
    let mut ids: Vec<u64> = outcomes.iter().map(|o| o.id).collect();
    ids.sort();
    assert_eq!(ids, (10..16).collect::<Vec<_>>());
    assert_eq!(stats.invocations, 6);
    assert_eq!(stats.lateness.len(), 6);
    // Planned: 1 ms each; used: what the processes' rusage says.
    assert_eq!(stats.planned_cpu, 6 * MS);
    assert_eq!(
        stats.used_cpu,
        outcomes.iter().map(|o| o.cpu).sum::<Nanos>()
    );
    let ratio = stats.to_json()["cpu_over_planned"].as_f64().unwrap();
    assert_eq!(ratio, stats.used_cpu as f64 / (6 * MS) as f64);
    let mut exits = policy.exits.clone();
    exits.sort();
    assert_eq!(exits, ids);
    assert_eq!(policy.started.len(), 6);
    for o in &outcomes {
        assert!(o.arrival <= o.first_run && o.first_run <= o.finish, "{o:?}");
        assert!(o.cpu > 0, "{o:?}");
        assert!(policy_of(dir.path(), o.id).contains("SCHED_OTHER"));
    }
}

#[test]
fn a_cpu_watch_demotes_a_fifo_process_and_the_kernel_shows_it() {
    if !privilege::probe().realtime {
        eprintln!("skipped: needs the privilege for SCHED_FIFO (CI runs as root)");
        return;
    }
    // As `faasched replay` does: the launcher above its real-time children,
    // so it looks at their CPU time when it means to.
    let _launcher = privilege::Realtime::enter().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Kept: FIFO to the end.
    let mut keep = Demote::new(Class::Fifo(10), None);
    let mut kept = Vec::new();
    replay::run(
        &config(),
        &mut keep,
        invocations(2, 100 * MS, 50 * MS),
        spin_then_report(dir.path(), 40_000),
        |o| kept.push(o),
    )
    .unwrap();
    for o in &kept {
        assert!(policy_of(dir.path(), o.id).contains("SCHED_FIFO"), "{o:?}");
    }
    // Demoted after 10 ms of CPU.
    let mut demote = Demote::new(Class::Fifo(10), Some(10 * MS));
    let mut outcomes = Vec::new();
    let stats = replay::run(
        &config(),
        &mut demote,
        invocations(2, 100 * MS, 50 * MS),
        spin_then_report(dir.path(), 40_000),
        |o| outcomes.push(o),
    )
    .unwrap();
    assert_eq!(demote.fired.len(), 2, "{:?}", demote.fired);
    let by_task: HashMap<u64, Nanos> = demote.fired.iter().map(|(t, u)| (t.0, *u)).collect();
    for o in &outcomes {
        assert!(policy_of(dir.path(), o.id).contains("SCHED_OTHER"), "{o:?}");
        // Fired at or after the watch, and before the process finished.
        let used = by_task[&o.id];
        assert!((10 * MS..o.cpu).contains(&used), "{used} of {}", o.cpu);
    }
    assert_eq!(stats.steering.watch_lags.len(), 2);
    assert_eq!(stats.steering.changes, 2);
    // Each watch told by its CPU timer and looked at once.
    assert_eq!(stats.steering.watch_checks, 2);
}

#[test]
fn a_missing_program_fails_with_the_step_and_errno() {
    let mut policy = Demote::new(Class::Normal, None);
    let err = replay::run(
        &Config {
            program: "/nonexistent/faasched-test".into(),
            ..config()
        },
        &mut policy,
        invocations(1, MS, MS),
        |_| Vec::new(),
        |_| {},
    )
    .unwrap_err();
    assert!(matches!(err, ReplayError::Start { id: 10, .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("exec failed"), "{text}");
    let source = std::error::Error::source(&err).map(|e| e.to_string());
    assert!(
        source.as_ref().is_some_and(|s| s.contains("No such file")),
        "{text}: {source:?}"
    );
}

#[test]
fn a_run_far_past_its_work_is_stopped_and_its_children_killed() {
    // Planned: 1 ms of CPU. The function sleeps 2 s, then leaves a mark.
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("mark");
    let script = format!("sleep 2; touch {}", mark.display());
    let mut policy = Demote::new(Class::Normal, None);
    let begun = std::time::Instant::now();
    let err = replay::run(
        &Config {
            overrun: 200 * MS,
            ..config()
        },
        &mut policy,
        invocations(1, MS, MS),
        |_| vec!["-c".into(), script.clone().into()],
        |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(err, ReplayError::Overran { in_flight: 1, .. }),
        "{err}"
    );
    assert!(begun.elapsed() < std::time::Duration::from_millis(1_900));
    // Killed, so it never leaves its mark.
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    assert!(!mark.exists(), "the function outlived the replay");
}

#[test]
fn a_pile_up_past_the_limit_stops_the_run() {
    // Three invocations at once, each sleeping a second; two may run.
    let mut policy = Demote::new(Class::Normal, None);
    let begun = std::time::Instant::now();
    let err = replay::run(
        &Config {
            max_in_flight: 2,
            ..config()
        },
        &mut policy,
        invocations(3, 0, MS),
        |_| vec!["-c".into(), "sleep 1".into()],
        |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(err, ReplayError::Crowded { id: 12, limit: 2 }),
        "{err}"
    );
    assert!(err.to_string().contains("make 3 in flight"), "{err}");
    assert!(begun.elapsed() < std::time::Duration::from_millis(900));
}

/// Starts every task as SCHED_BATCH with a watch far off; at the first
/// exit the watch falls to `lowered`, for every task still batch
/// ([`Steer::rewatch`]), and a task whose watch fires moves to SCHED_OTHER.
struct Lowering {
    watch: Nanos,
    lowered: Nanos,
    batch: Vec<TaskId>,
    moved: bool,
    fired: Vec<(TaskId, Nanos)>,
}

impl Steer for Lowering {
    fn name(&self) -> &str {
        "lowering"
    }
    fn on_arrival(&mut self, _now: Time, task: &TaskInfo, _cpus: CpuSet) -> Attrs {
        self.batch.push(task.task);
        Attrs::normal(cpus()).with_class(Class::Batch)
    }
    fn cpu_watch(&self, task: TaskId) -> Option<Nanos> {
        self.batch.contains(&task).then_some(self.watch)
    }
    fn on_cpu_used(&mut self, _now: Time, task: TaskId, used: Nanos) -> Option<Attrs> {
        self.fired.push((task, used));
        self.batch.retain(|&t| t != task);
        Some(Attrs::normal(cpus()))
    }
    fn on_exit(&mut self, _now: Time, task: TaskId, _o: &Outcome) {
        self.batch.retain(|&t| t != task);
        if self.watch != self.lowered {
            self.watch = self.lowered;
            self.moved = true;
        }
    }
    fn rewatch(&mut self) -> Vec<TaskId> {
        match std::mem::take(&mut self.moved) {
            true => self.batch.clone(),
            false => Vec::new(),
        }
    }
}

#[test]
fn a_watch_the_policy_lowers_holds_for_the_tasks_already_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = Lowering {
        watch: 3_600_000 * MS,
        lowered: 10 * MS,
        batch: Vec::new(),
        moved: false,
        fired: Vec::new(),
    };
    let all = invocations(2, MS, MS);
    // The second spins for about 50 ms; the first is gone long before.
    let mut outcomes = Vec::new();
    let mut args = spin_then_report(dir.path(), 100);
    let mut long = spin_then_report(dir.path(), 40_000);
    replay::run(
        &config(),
        &mut policy,
        all,
        |inv| match inv.id {
            10 => args(inv),
            _ => long(inv),
        },
        |o| outcomes.push(o),
    )
    .unwrap();
    assert_eq!(outcomes.len(), 2);
    assert_eq!(
        policy.fired.iter().map(|f| f.0).collect::<Vec<_>>(),
        vec![TaskId(11)],
        "{:?}",
        policy.fired
    );
    let cpu_11 = outcomes.iter().find(|o| o.id == 11).unwrap().cpu;
    assert!(policy.fired[0].1 < cpu_11, "{:?} of {cpu_11}", policy.fired);
    assert!(policy_of(dir.path(), 10).contains("SCHED_BATCH"));
    assert!(policy_of(dir.path(), 11).contains("SCHED_OTHER"));
}

/// One function process killed from outside mid-run is a failed
/// invocation: the replay goes on and returns the others' outcomes, and
/// steering forgets the killed task (its policy hears of its exit).
#[test]
fn a_function_killed_from_outside_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("victim");
    // 11 becomes `sleep` (exec: its pid is the launcher's child) once it
    // has left its pid; 12 waits for that pid, however long (the replay's
    // overrun bound ends a run that hangs), and kills it.
    let victim = format!(
        "echo $$ > {0}.tmp && mv {0}.tmp {0} && exec sleep 60",
        pid_file.display()
    );
    let killer = format!(
        "while [ ! -s {0} ]; do sleep 0.01; done; kill -9 $(cat {0})",
        pid_file.display()
    );
    // A CPU watch that the sleeping victim never reaches: steering must
    // drop it with the task.
    let mut policy = Demote::new(Class::Normal, Some(3_600_000 * MS));
    let mut outcomes = Vec::new();
    let stats = replay::run(
        &config(),
        &mut policy,
        invocations(4, 5 * MS, MS),
        |inv| {
            let script = match inv.id {
                11 => victim.clone(),
                12 => killer.clone(),
                _ => "true".to_string(),
            };
            vec!["-c".into(), script.into()]
        },
        |o| outcomes.push(o),
    )
    .unwrap();
    let mut ids: Vec<u64> = outcomes.iter().map(|o| o.id).collect();
    ids.sort();
    assert_eq!(ids, [10, 12, 13]);
    assert_eq!((stats.invocations, stats.failed), (3, 1));
    assert_eq!(stats.failed_ids, [11]);
    assert_eq!(stats.to_json()["failed_invocations"], 1);
    // The used CPU is the finished invocations' alone.
    assert_eq!(
        stats.used_cpu,
        outcomes.iter().map(|o| o.cpu).sum::<Nanos>()
    );
    assert_eq!(stats.planned_cpu, 3 * MS);
    let mut exits = policy.exits.clone();
    exits.sort();
    assert_eq!(exits, [10, 11, 12, 13]);
    assert!(policy.fired.is_empty(), "{:?}", policy.fired);
}
