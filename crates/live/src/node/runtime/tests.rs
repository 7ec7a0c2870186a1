//! The runtime's threads over a fake executor whose jobs say what happened
//! to them: placement, preemption, take-back and shutdown as the policies
//! decide them, with every request answered once. Nothing here depends on
//! timing: a job that must be preempted waits for the preemption (with a
//! cap that fails the test instead of hanging it).

use super::fake::{Fake, GATE_CAP, invoke, send, wait_run};
use super::*;
use crate::node::invoke::{Answer, Completed};
use faasched_model::{MS, SEC};
use faasched_policy::node::{PreemptTest, Queues, Resume, RoundRobin, Scan, Shinjuku, SledgeScale};
use std::sync::Arc;
use std::sync::mpsc;

fn config(dispatchers: usize, workers: usize) -> RuntimeConfig {
    RuntimeConfig {
        dispatchers,
        workers,
        ..RuntimeConfig::default()
    }
}

#[test]
fn sledgescale_preempts_a_long_request_for_an_urgent_one_and_resumes_it_where_it_stopped() {
    let (fake, runs) = Fake::new(1);
    let policy = SledgeScale::new(Scan::Paper, PreemptTest::Paper);
    let rt = Runtime::start(config(1, 1), vec![Box::new(policy)], fake).unwrap();
    let (tx, rx) = mpsc::channel();
    send(&rt, invoke("gate", 7, 10 * SEC), 0, &tx);
    assert_eq!(wait_run(&runs, "gate"), 0);
    send(&rt, invoke("echo", 21, MS), 1, &tx);
    let first = rx.recv_timeout(GATE_CAP).unwrap();
    let second = rx.recv_timeout(GATE_CAP).unwrap();
    assert_eq!(first.0, 1, "the urgent request is answered first");
    assert_eq!(first.1.as_ref().unwrap().value, 42);
    assert_eq!(first.1.unwrap().preemptions, 0);
    let long: Completed = second.1.unwrap();
    assert_eq!((second.0, long.value, long.preemptions), (0, 7, 1));
    assert!(long.started <= long.runtime, "{long:?}");
    assert_eq!((long.dispatcher, long.worker), (0, 0));
    let s = rt.status_json();
    assert_eq!(s["preemptions"], 1);
    assert_eq!(s["completed"], 2);
    assert_eq!(
        rt.switches().count,
        1,
        "the switch to the urgent one is timed"
    );
    rt.stop();
}

#[test]
fn a_request_naming_no_deadline_is_due_ten_times_its_estimate_so_a_long_one_yields() {
    // The gate's estimate is 1 s, so it is due in 10 s and has 9 s of
    // slack when the echo (1 µs, due in 10 µs) arrives: it is preempted.
    // Under one fixed deadline shorter than its work it would have none,
    // never be preempted, and fail after GATE_CAP.
    let (fake, runs) = Fake::new(1);
    let policy = SledgeScale::new(Scan::Paper, PreemptTest::Paper);
    let rt = Runtime::start(config(1, 1), vec![Box::new(policy)], fake).unwrap();
    let (tx, rx) = mpsc::channel();
    let undated = |function, arg| Invoke {
        deadline: None,
        ..invoke(function, arg, 0)
    };
    send(&rt, undated("gate", 3), 0, &tx);
    wait_run(&runs, "gate");
    send(&rt, undated("echo", 1), 1, &tx);
    let first = rx.recv_timeout(GATE_CAP).unwrap();
    let second = rx.recv_timeout(GATE_CAP).unwrap();
    assert_eq!((first.0, first.1.unwrap().value), (1, 2));
    assert_eq!((second.0, second.1.unwrap().preemptions), (0, 1));
    rt.stop();
}

#[test]
fn a_deadline_spec_names_a_function_and_the_rest_get_ten_times_their_estimate() {
    use faasched_workload::node::{Deadline, Deadlines};
    let spec = |s: &str| RuntimeConfig {
        deadlines: Deadlines::parse(s).unwrap(),
        ..RuntimeConfig::default()
    };
    let paper = RuntimeConfig::default();
    assert_eq!(paper.deadline("fib").of(3 * MS), 30 * MS);
    let fib = spec("fib=2ms");
    assert_eq!(fib.deadline("fib").of(3 * MS), 2 * MS);
    assert_eq!(fib.deadline("spin").of(3 * MS), 30 * MS);
    let all = spec("fib=2x,*=100ms");
    assert_eq!(all.deadline("fib").of(3 * MS), 6 * MS);
    assert_eq!(all.deadline("spin"), Deadline::Absolute(100 * MS));
}

#[test]
fn shinjuku_takes_a_request_back_after_its_quantum_and_resumes_it_on_the_same_worker() {
    let (fake, runs) = Fake::new(1);
    let policy = Shinjuku::new(Queues::Single, Resume::SameWorker);
    let rt = Runtime::start(config(1, 1), vec![Box::new(policy)], fake).unwrap();
    let (tx, rx) = mpsc::channel();
    send(&rt, invoke("gate", 5, 10 * SEC), 0, &tx);
    wait_run(&runs, "gate");
    send(&rt, invoke("echo", 4, 10 * SEC), 1, &tx);
    let (a, b) = (
        rx.recv_timeout(GATE_CAP).unwrap(),
        rx.recv_timeout(GATE_CAP).unwrap(),
    );
    assert_eq!((a.0, a.1.unwrap().value), (1, 8));
    let long = b.1.unwrap();
    assert_eq!((b.0, long.value, long.preemptions), (0, 5, 1));
    let mut m = String::new();
    rt.write_metrics(&mut m);
    assert!(m.contains("faasched_node_take_backs_total 1\n"), "{m}");
    rt.stop();
}

#[test]
fn every_request_is_answered_exactly_once_across_dispatchers_and_workers() {
    let (fake, _runs) = Fake::new(4);
    let policies: Policies = vec![Box::new(RoundRobin::new()), Box::new(RoundRobin::new())];
    let rt = Arc::new(Runtime::start(config(2, 2), policies, fake).unwrap());
    let (tx, rx) = mpsc::channel();
    let senders: Vec<_> = (0..4)
        .map(|t| {
            let rt = rt.clone();
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..500u64 {
                    let tag = t * 1000 + i;
                    let name = match i % 50 {
                        0 => "trap",
                        1 => "nothing",
                        _ => "echo",
                    };
                    send(&rt, invoke(name, tag as i64, MS), tag, &tx);
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    drop(tx);
    let mut seen = std::collections::BTreeMap::new();
    while let Ok((tag, answer)) = rx.recv_timeout(GATE_CAP) {
        assert!(
            seen.insert(tag, answer.clone()).is_none(),
            "{tag} answered twice"
        );
        if seen.len() == 2000 {
            break;
        }
    }
    assert_eq!(seen.len(), 2000);
    let mut places = std::collections::BTreeSet::new();
    for done in seen.values().flatten() {
        assert!(done.started <= done.runtime, "{done:?}");
        places.insert((done.dispatcher, done.worker));
    }
    assert!(places.iter().all(|&(d, w)| d < 2 && w < 2), "{places:?}");
    assert_eq!(
        places
            .iter()
            .map(|p| p.0)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        2,
        "requests go to the dispatchers in turn"
    );
    for (tag, answer) in &seen {
        match tag % 1000 % 50 {
            0 => assert_eq!(answer.as_ref().unwrap_err().kind(), "trap"),
            1 => assert_eq!(answer.as_ref().unwrap_err().kind(), "unknown-function"),
            _ => assert_eq!(answer.as_ref().unwrap().value, 2 * *tag as i64),
        }
    }
    let s = rt.status_json();
    assert_eq!(s["accepted"], 2000);
    assert_eq!(s["completed"], 1920);
    assert_eq!(s["failed"], 80);
    assert_eq!(s["in_flight"], 0);
}

#[test]
fn a_stopping_runtime_refuses_new_requests_and_answers_the_accepted_ones() {
    let (fake, _runs) = Fake::new(1);
    let rt = Runtime::start(config(1, 1), vec![Box::new(RoundRobin::new())], fake).unwrap();
    let (tx, rx) = mpsc::channel();
    for i in 0..100 {
        send(&rt, invoke("echo", i, MS), i as u64, &tx);
    }
    rt.stop_accepting();
    send(&rt, invoke("echo", 1, MS), 999, &tx);
    rt.stop();
    drop(tx);
    let answers: Vec<(u64, Answer)> = rx.iter().collect();
    assert_eq!(answers.len(), 101);
    let refused: Vec<_> = answers.iter().filter(|(_, a)| a.is_err()).collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].0, 999);
    assert_eq!(refused[0].1.as_ref().unwrap_err().kind(), "shutting-down");
}

#[test]
fn a_runtime_needs_a_policy_per_dispatcher() {
    let (fake, _runs) = Fake::new(2);
    let err = Runtime::start(config(2, 1), vec![Box::new(RoundRobin::new())], fake)
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("1 policies for 2 dispatchers"),
        "{err}"
    );
}

#[test]
fn a_polling_runtime_answers_like_a_sleeping_one() {
    let (fake, _runs) = Fake::new(1);
    let cfg = RuntimeConfig {
        poll: true,
        ..config(1, 1)
    };
    let rt = Runtime::start(cfg, vec![Box::new(RoundRobin::new())], fake).unwrap();
    let (tx, rx) = mpsc::channel();
    for i in 0..200 {
        send(&rt, invoke("echo", i, MS), i as u64, &tx);
    }
    let mut values: Vec<i64> = (0..200)
        .map(|_| rx.recv_timeout(GATE_CAP).unwrap().1.unwrap().value)
        .collect();
    values.sort();
    assert_eq!(values, (0..200).map(|i| 2 * i).collect::<Vec<_>>());
    rt.stop();
}

#[test]
fn a_cancelled_request_is_answered_cancelled_without_running() {
    let (fake, runs) = Fake::new(1);
    let rt = Runtime::start(config(1, 1), vec![Box::new(RoundRobin::new())], fake).unwrap();
    let (tx, rx) = mpsc::channel();
    send(&rt, invoke("gate", 1, 10 * SEC), 0, &tx);
    wait_run(&runs, "gate");
    let gone = invoke("echo", 2, 10 * SEC);
    gone.cancel.cancel();
    send(&rt, gone, 1, &tx);
    // The gate ends once it has been stopped (by rr's quantum, or here).
    rt.executor().preempt(0);
    let mut answers: Vec<(u64, Answer)> =
        (0..2).map(|_| rx.recv_timeout(GATE_CAP).unwrap()).collect();
    answers.sort_by_key(|a| a.0);
    assert_eq!(answers[0].1.as_ref().unwrap().value, 1);
    assert_eq!(answers[1].1, Err(Failure::Cancelled));
    assert!(
        runs.try_iter().all(|(name, _)| name != "echo"),
        "the cancelled request never ran"
    );
    rt.stop();
}
