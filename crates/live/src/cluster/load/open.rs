//! The open loop: a schedule's calls sent at their times, whether or not
//! the earlier ones were answered, over a bounded set of connections, so
//! that a slow cluster sees the load the schedule says rather than less
//! (no coordinated omission):
//!
//! 1. every connection is opened before the clock starts (a target that
//!    refuses one is [`LoadError::Connect`]);
//! 2. calls are taken in schedule order; each waits for its time, then for
//!    a free connection (when all are busy it queues, and the queueing
//!    counts in its latency: [`CallRecord::intended`] is its time in the
//!    schedule, [`CallRecord::sent`] when it went out);
//! 3. each call is answered or fails with exactly one [`Failure`], over the
//!    node load generator's client, as in the closed loop;
//! 4. sending stops at the end of the schedule, at the first call due at or
//!    after [`LoadConfig::duration`], or when `stop` says so; the calls due
//!    by then but still waiting for a connection are [`Failure::Unsent`];
//! 5. the calls in flight get until [`LoadConfig::drain`] past the duration
//!    to be answered, unless `stop` says so first: those left are
//!    [`Failure::Unfinished`] or [`Failure::Interrupted`].
//!
//! A call waits for its time with tokio's timer (1 ms ticks), not the node
//! load generator's spin: the client shares the machine's few cores with
//! the cluster's nodes, and a spin before each of a thousand calls a
//! second would hold a core. A call goes out up to a tick late; its
//! latency counts from its time all the same.

use super::{Call, CallRecord, ClientRun, Failure, HttpSender, apply, connect_all, request};
use crate::node::load::{Answer, End, LoadConfig, LoadError, attempt, drain, stopped};
use faasched_model::Time;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until, timeout};

/// A connection: its index, and its sender (`None`: to open again).
type Slot = (u32, Option<HttpSender>);

/// What a call's task reports: its record's index, the outcome, and when
/// it came.
type Done = (usize, Result<Answer, Failure>, Time);

/// Sends `calls` (in the order of their send times) to `config.target`
/// over `config.mode.connections()` connections, each at its
/// [`Call::send`], without waiting for the earlier ones' answers; asks
/// `stop` every 10 ms whether to end early, and then still returns what
/// was measured. Fails only before the first call: a bad config or a
/// target that refuses to connect.
pub fn run_schedule(
    config: &LoadConfig,
    calls: impl IntoIterator<Item = Call>,
    stop: &dyn Fn() -> bool,
) -> Result<ClientRun, LoadError> {
    let addr = config.validate()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LoadError::Runtime)?;
    // Dropping the runtime at the end cancels what is still in flight.
    runtime.block_on(drive(config, addr, calls.into_iter(), stop))
}

async fn drive(
    config: &LoadConfig,
    addr: SocketAddr,
    mut calls: impl Iterator<Item = Call>,
    stop: &dyn Fn() -> bool,
) -> Result<ClientRun, LoadError> {
    let senders = connect_all(config, addr).await?;
    let per_call = Duration::from_nanos(config.timeout);
    // Free connections; sized so that giving one back never waits.
    let (free_tx, mut free_rx) = mpsc::channel::<Slot>(senders.len());
    for slot in (0u32..).zip(senders) {
        let _ = free_tx.try_send((slot.0, Some(slot.1)));
    }
    let start = Instant::now();
    let at = move |t: Time| start + Duration::from_nanos(t);
    let now = move || -> Time {
        Instant::now()
            .saturating_duration_since(start)
            .as_nanos()
            .try_into()
            .unwrap_or(Time::MAX)
    };
    let hard_end = config.duration.saturating_add(config.drain);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let mut records: Vec<CallRecord> = Vec::new();
    let mut in_flight = 0usize;
    let mut end = End::Completed;
    let unsent = |call: Call, id: usize, stopped_at: Time| CallRecord {
        id: id as u64,
        intended: call.send,
        failure: Some(Failure::Unsent),
        ..CallRecord::new(call, stopped_at)
    };
    loop {
        while let Ok(done) = done_rx.try_recv() {
            apply_done(&mut records, done);
            in_flight -= 1;
        }
        let call = match calls.next() {
            Some(c) if c.send < config.duration => c,
            _ => break,
        };
        if call.send > now() {
            tokio::select! {
                _ = sleep_until(at(call.send)) => {}
                _ = stopped(stop) => {
                    end = End::Interrupted;
                    // Not due yet, it is not part of the run; come due
                    // (the timer wakes a tick late), it was not sent.
                    let stopped_at = now();
                    if call.send <= stopped_at {
                        records.push(unsent(call, records.len(), stopped_at));
                    }
                    break;
                }
            }
        }
        let (connection, slot) = tokio::select! {
            slot = free_rx.recv() => slot.expect("the pacing task keeps a sender"),
            _ = sleep_until(at(hard_end)) => {
                end = End::DrainTimeout;
                records.push(unsent(call, records.len(), now()));
                break;
            }
            _ = stopped(stop) => {
                end = End::Interrupted;
                records.push(unsent(call, records.len(), now()));
                break;
            }
        };
        let message = request(&config.target, &call);
        let intended = call.send;
        let sent = now();
        records.push(CallRecord {
            id: records.len() as u64,
            client: connection,
            intended,
            ..CallRecord::new(call, sent)
        });
        let index = records.len() - 1;
        in_flight += 1;
        let (done_tx, free_tx) = (done_tx.clone(), free_tx.clone());
        tokio::spawn(async move {
            let (slot, result) = match timeout(per_call, attempt(slot, addr, message)).await {
                Ok(outcome) => outcome,
                // The connection is in an unknown state: the next call
                // opens a new one.
                Err(_) => (None, Err(Failure::ResponseTimeout)),
            };
            let _ = done_tx.send((index, result, now()));
            let _ = free_tx.try_send((connection, slot));
        });
    }
    if end != End::Completed {
        // Those due when sending stopped, queued behind the one it stopped
        // at; the rest were never due.
        let due = now();
        for call in calls.by_ref() {
            if call.send >= config.duration || call.send > due {
                break;
            }
            records.push(unsent(call, records.len(), due));
        }
    }
    drop(done_tx);
    let end = drain(&mut done_rx, in_flight, at(hard_end), stop, end, |done| {
        apply_done(&mut records, done)
    })
    .await;
    let left = match end {
        End::Interrupted => Failure::Interrupted,
        _ => Failure::Unfinished,
    };
    for r in &mut records {
        if r.done.is_none() && r.failure.is_none() {
            r.failure = Some(left.clone());
        }
    }
    Ok(ClientRun {
        records,
        end,
        elapsed: now(),
    })
}

/// Puts a call task's outcome into its record.
fn apply_done(records: &mut [CallRecord], (index, result, done): Done) {
    apply(&mut records[index], result, done);
}
