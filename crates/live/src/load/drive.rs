//! The drivers: the open loop's pacing task and the closed loop's
//! clients, over the connections, and what each call became (the steps
//! are the [module](super)'s).

use super::config::LoadConfig;
use super::http::{Dest, Http, Sender, attempt, presenting};
use super::outcome::{Answer, End, Failure, LoadError};
use super::transport::Transport;
use super::{Call, HttpCall, Record, Run, Sampler};
use crate::auth::Token;
use faasched_model::Time;
use faasched_sys::clock::FineTimerSlack;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep, sleep_until, timeout};

/// How early the pacing task stops sleeping to spin up to a request's
/// intended time: tokio's timer has a granularity of 1 ms and rounds a
/// deadline up to its next tick, so a sleep ends up to 1 ms after it was
/// due, and the wake-up itself takes a little more. Two ticks early, the
/// spin starts before the intended time unless the machine holds the
/// client back for over 1 ms. (At 1,000 requests/s under SCHED_FIFO, 1 ms
/// early sent a tenth of the requests 0.3 ms or more late; 2 ms early,
/// 99% within 29 µs.)
const SPIN: Duration = Duration::from_millis(2);

/// How often a wait asks `stop` whether to end the run.
const STOP_POLL: Duration = Duration::from_millis(10);

/// How the open loop waits for a call's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pacing {
    /// Tokio's timer to 2 ms before, then a spin: a call goes out
    /// within microseconds of its time, and the client holds a core while
    /// it waits (a node's load, where µs matter).
    Spin,
    /// Tokio's timer alone (1 ms ticks): a call goes out up to a tick late
    /// and its latency counts from its time all the same; the client holds
    /// no core (a cluster's load, sharing the machine's cores with the
    /// cluster's nodes).
    Timer,
    /// The thread asleep to the call's time (at most 10 ms at a time, the
    /// answers come in between), its timer slack at 1 ns so that a sleep
    /// ends within microseconds: no spin, no tick, and the driver's
    /// thread is blocked meanwhile. For a runtime in this process, whose
    /// workers need the cores and whose calls wait on no socket of the
    /// driver's.
    Sleep,
}

/// The instants of a run's clock, ns from its start.
#[derive(Clone, Copy)]
struct Clock {
    start: Instant,
}

impl Clock {
    fn at(self, t: Time) -> Instant {
        self.start + Duration::from_nanos(t)
    }

    fn now(self) -> Time {
        self.of(Instant::now())
    }

    fn of(self, at: Instant) -> Time {
        at.saturating_duration_since(self.start)
            .as_nanos()
            .try_into()
            .unwrap_or(Time::MAX)
    }
}

/// The current-thread runtime a run is driven on; dropping it at the end
/// cancels what is still in flight.
fn runtime() -> Result<tokio::runtime::Runtime, LoadError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LoadError::Runtime)
}

/// What a call's task reports: its record's index, the outcome, and when
/// it came.
type Done = (usize, Result<Answer, Failure>, Time);

/// The open loop: sends `calls` (in the order of their send times) over
/// `transport`, each at its [`Call::send`] as `pacing` waits for it,
/// without waiting for the earlier ones' answers (the [module](super)'s
/// steps); asks `stop` every 10 ms whether to end early, and then still
/// returns what was measured. Fails only before the first call: a bad
/// config or a target that refuses to connect.
pub fn open<C: Call, T: Transport<C>>(
    config: &LoadConfig,
    transport: T,
    calls: impl IntoIterator<Item = C>,
    pacing: Pacing,
    stop: &dyn Fn() -> bool,
) -> Result<Run<C>, LoadError> {
    config.validate()?;
    // Sleeps end when asked, not up to 50 µs later.
    let _slack = (pacing == Pacing::Sleep).then(FineTimerSlack::set);
    runtime()?.block_on(drive_open(
        config,
        transport,
        calls.into_iter(),
        pacing,
        stop,
    ))
}

async fn drive_open<C: Call, T: Transport<C>>(
    config: &LoadConfig,
    mut transport: T,
    mut calls: impl Iterator<Item = C>,
    pacing: Pacing,
    stop: &dyn Fn() -> bool,
) -> Result<Run<C>, LoadError> {
    transport.start(config).await?;
    let per_call = Duration::from_nanos(config.timeout);
    let clock = Clock {
        start: Instant::now(),
    };
    let hard_end = config.duration.saturating_add(config.drain);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let mut records: Vec<Record<C>> = Vec::new();
    let mut in_flight = 0usize;
    let mut end = End::Completed;
    let unsent = |call: C, records: &Vec<Record<C>>| Record::unsent(call, records.len() as u64);
    loop {
        while let Ok(done) = done_rx.try_recv() {
            apply(&mut records, done);
            in_flight -= 1;
        }
        let call = match calls.next() {
            Some(c) if c.send() < config.duration => c,
            _ => break,
        };
        if !wait_until(clock.at(call.send()), pacing, stop).await {
            end = End::Interrupted;
            // Not due yet, it is not part of the run; come due (the timer
            // wakes a tick late), it was not sent.
            let stopped_at = clock.now();
            if call.send() <= stopped_at {
                records.push(unsent(call, &records));
            }
            break;
        }
        let (lane_number, lane) = tokio::select! {
            // A free lane first: one that is free at once costs no timer.
            biased;
            lane = transport.free() => lane,
            _ = sleep_until(clock.at(hard_end)) => {
                end = End::DrainTimeout;
                records.push(unsent(call, &records));
                break;
            }
            _ = stopped(stop) => {
                end = End::Interrupted;
                records.push(unsent(call, &records));
                break;
            }
        };
        if clock.now() >= hard_end {
            transport.unused(lane_number, lane);
            end = End::DrainTimeout;
            records.push(unsent(call, &records));
            break;
        }
        let intended = call.send();
        let sent = Instant::now();
        let came = transport.send(
            lane_number,
            lane,
            &call,
            clock.at(intended),
            sent + per_call,
        );
        records.push(Record::sent(
            call,
            records.len() as u64,
            lane_number,
            intended,
            clock.of(sent),
        ));
        let index = records.len() - 1;
        in_flight += 1;
        let done_tx = done_tx.clone();
        tokio::spawn(async move {
            let (result, at) = came.await;
            let _ = done_tx.send((index, result, clock.of(at)));
        });
    }
    if end != End::Completed {
        // Those due when sending stopped, queued behind the one it stopped
        // at; the rest were never due.
        let due = clock.now();
        for call in calls.by_ref() {
            if call.send() >= config.duration || call.send() > due {
                break;
            }
            records.push(unsent(call, &records));
        }
    }
    drop(done_tx);
    let end = drain(
        &mut done_rx,
        in_flight,
        clock.at(hard_end),
        stop,
        end,
        |done| apply(&mut records, done),
    )
    .await;
    let left = match end {
        End::Interrupted => Failure::Interrupted,
        _ => Failure::Unfinished,
    };
    for r in &mut records {
        if r.pending() {
            r.failure = Some(left.clone());
        }
    }
    Ok(Run {
        records,
        end,
        elapsed: clock.now(),
    })
}

/// Puts a call task's outcome into its record.
fn apply<C>(records: &mut [Record<C>], (index, result, done): Done) {
    records[index].apply(result, done);
}

/// What every client of the closed loop shares.
struct Clients<S> {
    sampler: Mutex<S>,
    ids: std::sync::atomic::AtomicU64,
    target: String,
    dest: Dest,
    /// What every request presents.
    token: Option<Token>,
    clock: Clock,
    duration: Time,
    hard_end: Time,
    timeout: Duration,
}

/// The closed loop: `config.mode.connections()` clients, each on a
/// kept-alive connection of its own to `http`'s target, sending the next call `sampler` gives
/// it once its last was answered, at the call's send time, until
/// `config.duration` (the [module](super)'s steps); asks `stop` every 10
/// ms whether to end early, and then still returns what was measured.
/// Fails only before the first call: a bad config or a target that
/// refuses to connect.
pub fn closed<C: HttpCall, S: Sampler<C>>(
    config: &LoadConfig,
    http: &Http,
    sampler: S,
    stop: &dyn Fn() -> bool,
) -> Result<Run<C>, LoadError> {
    config.validate()?;
    runtime()?.block_on(drive_closed(config, http, sampler, stop))
}

async fn drive_closed<C: HttpCall, S: Sampler<C>>(
    config: &LoadConfig,
    http: &Http,
    sampler: S,
    stop: &dyn Fn() -> bool,
) -> Result<Run<C>, LoadError> {
    let senders = http.connect_all(config).await?;
    let clients = Arc::new(Clients {
        sampler: Mutex::new(sampler),
        ids: std::sync::atomic::AtomicU64::new(0),
        target: http.target().to_string(),
        dest: http.dest().clone(),
        token: config.token.clone(),
        clock: Clock {
            start: Instant::now(),
        },
        duration: config.duration,
        hard_end: config.duration.saturating_add(config.drain),
        timeout: Duration::from_nanos(config.timeout),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    for (i, sender) in (0u32..).zip(senders) {
        tasks.spawn(client::<C, S>(i, sender, clients.clone(), stop_rx.clone()));
    }
    let mut records = Vec::new();
    let mut interrupted = false;
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                Some(Ok(done)) => records.extend(done),
                Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Some(Err(_)) => {}
                None => break,
            },
            _ = stopped(stop), if !interrupted => {
                interrupted = true;
                let _ = stop_tx.send(true);
            }
        }
    }
    records.sort_by_key(|r: &Record<C>| r.id);
    let end = if interrupted {
        End::Interrupted
    } else if records
        .iter()
        .any(|r| r.failure == Some(Failure::Unfinished))
    {
        End::DrainTimeout
    } else {
        End::Completed
    };
    Ok(Run {
        records,
        end,
        elapsed: clients.clock.now(),
    })
}

/// One client: calls until the sampler, the duration or `stop` ends it;
/// its records, in the order it sent them.
async fn client<C: HttpCall, S: Sampler<C>>(
    index: u32,
    sender: Sender,
    clients: Arc<Clients<S>>,
    mut stop: watch::Receiver<bool>,
) -> Vec<Record<C>> {
    let c = &*clients;
    let mut records = Vec::new();
    let mut slot = Some(sender);
    let mut finish = 0;
    loop {
        let next = c
            .sampler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next(index, finish);
        let Some(call) = next.filter(|call| call.send() < c.duration) else {
            break;
        };
        // A call due already goes out without yielding, so that calls go
        // out in the order the sampler gave them.
        if call.send() > c.clock.now() {
            tokio::select! {
                _ = sleep_until(c.clock.at(call.send())) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
        let sent = c.clock.now();
        // Due before the end, but the client (or its timer) came late:
        // the run sends nothing past its duration.
        if sent >= c.duration {
            break;
        }
        let message = presenting(call.request(&c.target), c.token.as_ref());
        let id = c.ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // A client's call is due when the client sends it.
        let mut record = Record::sent(call, id, index, sent, sent);
        let (kept, result) = tokio::select! {
            outcome = timeout(c.timeout, attempt(slot.take(), &c.dest, message)) => {
                outcome.unwrap_or((None, Err(Failure::ResponseTimeout)))
            }
            _ = sleep_until(c.clock.at(c.hard_end)) => (None, Err(Failure::Unfinished)),
            _ = stop.wait_for(|s| *s) => (None, Err(Failure::Interrupted)),
        };
        slot = kept;
        finish = c.clock.now();
        record.apply(result, finish);
        let last = matches!(
            record.failure,
            Some(Failure::Unfinished | Failure::Interrupted)
        );
        records.push(record);
        if last {
            break;
        }
    }
    records
}

/// Waits until `when` as `pacing` says: the timer alone, the timer to
/// [`SPIN`] before it and a spin (yielding to the connections' tasks) the
/// rest, or the thread asleep; `false` if `stop` said to end first.
async fn wait_until(when: Instant, pacing: Pacing, stop: &dyn Fn() -> bool) -> bool {
    let early = match pacing {
        Pacing::Timer => Some(when),
        Pacing::Spin => when.checked_sub(SPIN),
        Pacing::Sleep => loop {
            if Instant::now() >= when {
                return true;
            }
            if stop() {
                return false;
            }
            // The answers that came meanwhile are taken in before the
            // sleep, not between its end and the call.
            tokio::task::yield_now().await;
            let now = Instant::now();
            if now >= when {
                return true;
            }
            std::thread::sleep((when - now).min(STOP_POLL));
        },
    };
    if let Some(early) = early
        && Instant::now() < early
    {
        tokio::select! {
            _ = sleep_until(early) => {}
            _ = stopped(stop) => return false,
        }
    }
    while Instant::now() < when {
        tokio::task::yield_now().await;
    }
    true
}

/// Gives `apply` each of the `in_flight` answers still out as it comes
/// (unless the run ended `Interrupted`), until all are in, `hard_end`
/// passes or `stop` says so; then whatever had already come. Returns how
/// the run ended: `end`, or `DrainTimeout` or `Interrupted` if the wait
/// was cut short.
async fn drain<D>(
    done: &mut mpsc::UnboundedReceiver<D>,
    mut in_flight: usize,
    hard_end: Instant,
    stop: &dyn Fn() -> bool,
    mut end: End,
    mut apply: impl FnMut(D),
) -> End {
    if end != End::Interrupted {
        while in_flight > 0 {
            tokio::select! {
                came = done.recv() => match came {
                    Some(d) => {
                        apply(d);
                        in_flight -= 1;
                    }
                    None => break,
                },
                _ = sleep_until(hard_end) => {
                    end = End::DrainTimeout;
                    break;
                }
                _ = stopped(stop) => {
                    end = End::Interrupted;
                    break;
                }
            }
        }
    }
    while let Ok(d) = done.try_recv() {
        apply(d);
    }
    end
}

/// Ends once `stop` says so, asking every [`STOP_POLL`].
async fn stopped(stop: &dyn Fn() -> bool) {
    while !stop() {
        sleep(STOP_POLL).await;
    }
}
