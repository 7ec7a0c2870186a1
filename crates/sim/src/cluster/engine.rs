//! The cluster engine's state and its reactions to arrivals and timers; the
//! loops that feed it are [`super::run_on`] and [`super::run_closed_on`].

use super::config::{ClusterConfig, ColdStart, Loads};
use super::cores::{Bind, Cores, Done, Job};
use super::events::{Timer, Timers};
use super::outcome::{ClusterError, ClusterSink, ClusterStats, ServerStats};
use super::{ClientCall, Clients};
use crate::node::Start;
use faasched_model::cluster::loadavg::{LOAD_FREQ, LoadAvg};
use faasched_model::cluster::{
    Choice, ContainerId, ContainerPool, FunctionProfile, InvocationId, InvocationInfo,
    InvocationOutcome, KeepAlive, Route, ServerId, ServerView, Servers,
};
use faasched_model::{FunctionId, Nanos, TIME_LIMIT, Time};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::DerefMut;

/// An engine step's result, with the input stream's error type.
pub(crate) type Res<E> = Result<(), ClusterError<E>>;

/// An invocation in flight on a server.
#[derive(Debug)]
struct Flight {
    info: InvocationInfo,
    work: Nanos,
    server: ServerId,
    /// Its container, from when it takes one (as it starts, or when its
    /// cores first run it) until it gives it back.
    container: Option<ContainerId>,
    cold: bool,
    /// Its cores refused it a container when they first ran it.
    refused: bool,
    /// When its work was handed to the server's cores (after a cold start
    /// in wall time).
    added: Time,
    client: Option<u32>,
}

/// An invocation waiting on its server for memory.
#[derive(Debug)]
struct Waiting {
    info: InvocationInfo,
    work: Nanos,
    client: Option<u32>,
    /// When it is dropped if it has not started by then.
    deadline: Option<Time>,
}

/// One server's engine-side state: `K` keeps its containers, `U` runs
/// its work.
struct Server<K, U> {
    cores: u32,
    /// What runs the work: its cores shared, a node, or a kernel.
    cpu: U,
    /// Its containers within its memory, kept by its keep-alive.
    pool: ContainerPool<K>,
    load: LoadAvg,
    /// Invocations starting cold without a core ([`ColdStart::Wall`]), by
    /// when they run, then id; with their slot.
    starting: BinaryHeap<Reverse<(Time, InvocationId, u32)>>,
    /// Invocations waiting for memory, in arrival order: OpenWhisk's
    /// ContainerPool run buffer.
    waiting: VecDeque<Waiting>,
    stats: ServerStats,
}

impl<K, U> Server<K, U>
where
    K: DerefMut,
    K::Target: KeepAlive,
    U: Cores,
{
    /// Invocations in flight: running on its cores, or starting cold
    /// without one.
    fn active(&self) -> u64 {
        self.cpu.in_flight() + self.starting.len() as u64
    }

    /// Whether nothing on the server can ever free memory for a waiting
    /// invocation: no invocation in flight whose container would become
    /// idle (and evictable), no idle container due to expire. New arrivals
    /// queue behind the waiting ones, so they change nothing.
    fn stuck(&self) -> bool {
        self.active() == 0 && self.pool.keep().next_expiry().is_none()
    }
}

/// Everything a run keeps, but the router, the clients and the sink.
pub(crate) struct Engine<'p, K, U> {
    now: Time,
    loads: Loads,
    cold_start: ColdStart,
    publish: Nanos,
    profiles: &'p [FunctionProfile],
    timers: Timers,
    servers: Vec<Server<K, U>>,
    views: Servers,
    flight: Vec<Option<Flight>>,
    free: Vec<u32>,
    in_flight: usize,
    next_container: u64,
    /// The next id of a closed-loop invocation.
    next_id: u64,
    /// Each closed-loop client's next invocation, while it is pending.
    sends: Vec<Option<ClientCall>>,
    pending_sends: usize,
    done: Vec<Done>,
    expired: Vec<ContainerId>,
    memory_wait: Option<Nanos>,
    transport: Nanos,
    /// Invocations waiting for memory on every server.
    waiting: usize,
    pub(crate) stats: ClusterStats,
    first_arrival: Option<Time>,
    last_finish: Option<Time>,
}

impl<'p, K, U> Engine<'p, K, U>
where
    K: DerefMut,
    K::Target: KeepAlive,
    U: Cores,
{
    /// A cluster of `config`'s shape (valid), booted at `start`: server
    /// `s`'s kernel samples its load every [`LOAD_FREQ`] from `start + s ×
    /// LOAD_FREQ / servers` on (a fixed stand-in for the arbitrary phase of
    /// each machine's sampling, which spreads the samples' extra age of
    /// 0–5 s evenly over the servers), and every server publishes every
    /// `config.publish` from `start` on. Server `s` runs its work on
    /// `cpus[s]` (one per server, idle from `start`).
    pub(crate) fn new(
        config: &ClusterConfig,
        profiles: &'p [FunctionProfile],
        mut keep_alive: impl FnMut(ServerId) -> K,
        cpus: Vec<U>,
        start: Time,
    ) -> Engine<'p, K, U> {
        let n = config.servers;
        let mut timers = Timers::new(n);
        let servers = cpus
            .into_iter()
            .enumerate()
            .map(|(s, cpu)| {
                let phase = LOAD_FREQ * s as u64 / n as u64;
                timers.add(start + phase + LOAD_FREQ, Timer::Sample(s as u32));
                Server {
                    cores: config.cores,
                    cpu,
                    pool: ContainerPool::new(
                        config.memory_mb as u64,
                        keep_alive(ServerId(s as u32)),
                    ),
                    load: LoadAvg::default(),
                    starting: BinaryHeap::new(),
                    waiting: VecDeque::new(),
                    stats: ServerStats::default(),
                }
            })
            .collect();
        timers.add(start + config.publish, Timer::Publish);
        let view = ServerView {
            cores: config.cores,
            memory_mb: config.memory_mb,
            load: 0.0,
            published: start,
            running: 0,
        };
        Engine {
            now: start,
            loads: config.loads,
            cold_start: config.cold_start,
            publish: config.publish,
            profiles,
            timers,
            servers,
            views: Servers::new(vec![view; n]),
            flight: Vec::new(),
            free: Vec::new(),
            in_flight: 0,
            next_container: 0,
            next_id: 0,
            sends: Vec::new(),
            pending_sends: 0,
            done: Vec::new(),
            expired: Vec::new(),
            memory_wait: config.memory_wait,
            transport: config.transport,
            waiting: 0,
            stats: ClusterStats {
                servers: vec![ServerStats::default(); n],
                ..ClusterStats::default()
            },
            first_arrival: None,
            last_finish: None,
        }
    }

    /// Whether anything is left to run but open-loop arrivals: invocations
    /// in flight or waiting for memory, or closed-loop sends pending.
    pub(crate) fn live(&self) -> bool {
        self.in_flight > 0 || self.waiting > 0 || self.pending_sends > 0
    }

    /// Whether only the periodic timers (load samples, publications) are
    /// left, with no send pending: whatever is still in flight is held by
    /// a node policy that no event will ever run, so the run is over
    /// ([`Engine::end`] names it). Processor-sharing and OS servers never
    /// stall: work in flight on them always has an event due.
    pub(crate) fn stalled(&self) -> bool {
        self.pending_sends == 0
            && matches!(self.timers.peek(), Some(Timer::Sample(_) | Timer::Publish))
            && !self.timers.any_movable()
    }

    /// The clock moves to `t`, an arrival's instant (no timer is due
    /// before it).
    pub(crate) fn advance_to(&mut self, t: Time) {
        self.now = self.now.max(t);
    }

    /// When the next timer is due.
    pub(crate) fn next_at(&self) -> Option<Time> {
        self.timers.next_at()
    }

    /// The function profile of `f`, if it has one.
    pub(crate) fn profile(&self, f: FunctionId) -> Option<FunctionProfile> {
        self.profiles.get(f.0 as usize).copied()
    }

    /// Asks closed-loop client `c` for its next invocation, as it has its
    /// last answer at `at` (now, or later by the transport), and schedules
    /// it.
    pub(crate) fn ask<E>(
        &mut self,
        c: u32,
        at: Time,
        clients: &mut (impl Clients + ?Sized),
    ) -> Res<E> {
        let Some(call) = clients.next(c, at) else {
            return Ok(());
        };
        let err = |what: String| Err(ClusterError::Client { client: c, what });
        if call.send < at {
            return err(format!(
                "would send at {} ns, before its last answer ({at} ns)",
                call.send
            ));
        }
        if call.send > TIME_LIMIT || call.work > TIME_LIMIT {
            return err(format!(
                "would send at {} ns work of {} ns, beyond the clock's limit of {TIME_LIMIT} ns",
                call.send, call.work
            ));
        }
        if self.profile(call.function).is_none() {
            return err(format!(
                "would invoke function {}, of {} profiled",
                call.function.0,
                self.profiles.len()
            ));
        }
        let i = c as usize;
        if self.sends.len() <= i {
            self.sends.resize(i + 1, None);
        }
        if self.sends[i].replace(call).is_none() {
            self.pending_sends += 1;
        }
        self.timers.add(call.send, Timer::Send(c));
        Ok(())
    }

    /// Runs the next timer.
    pub(crate) fn fire<E, R, S, C>(
        &mut self,
        router: &mut R,
        sink: &mut S,
        clients: &mut C,
    ) -> Res<E>
    where
        R: Route + ?Sized,
        S: ClusterSink,
        C: Clients + ?Sized,
    {
        let Some((at, timer)) = self.timers.pop() else {
            return Ok(());
        };
        if at > crate::RUN_LIMIT {
            return Err(ClusterError::TimeLimit {
                finished: self.stats.finished,
            });
        }
        self.now = at;
        self.stats.events += 1;
        match timer {
            Timer::Finish(s) => {
                self.finish(s as usize, router, sink, clients)?;
            }
            Timer::Ready(s) => {
                self.ready(s as usize)?;
            }
            Timer::Expire(s) => {
                self.expire(s as usize)?;
                self.serve_and_reschedule(s as usize, router, sink, clients)?;
            }
            Timer::Wait(s) => {
                self.serve_and_reschedule(s as usize, router, sink, clients)?;
            }
            Timer::Sample(s) => {
                let srv = &mut self.servers[s as usize];
                srv.load.sample(srv.active());
                self.timers.add(at + LOAD_FREQ, Timer::Sample(s));
            }
            Timer::Publish => {
                self.publish_all(router);
                self.timers.add(at + self.publish, Timer::Publish);
            }
            Timer::Send(c) => {
                let call = self.sends.get_mut(c as usize).and_then(Option::take);
                if let Some(call) = call {
                    self.pending_sends -= 1;
                    let id = InvocationId(self.next_id);
                    self.next_id += 1;
                    self.arrive(id, call.function, call.work, Some(c), router, sink, clients)?;
                }
            }
        }
        Ok(())
    }

    /// An invocation arrives now (its function has a profile).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn arrive<E, R, S, C>(
        &mut self,
        id: InvocationId,
        function: FunctionId,
        work: Nanos,
        client: Option<u32>,
        router: &mut R,
        sink: &mut S,
        clients: &mut C,
    ) -> Res<E>
    where
        R: Route + ?Sized,
        S: ClusterSink,
        C: Clients + ?Sized,
    {
        let now = self.now;
        let Some(profile) = self.profile(function) else {
            return Err(ClusterError::Invocation {
                id,
                what: format!("function {} has no profile", function.0),
            });
        };
        self.stats.invocations += 1;
        self.stats.events += 1;
        self.first_arrival.get_or_insert(now);
        let info = InvocationInfo {
            id,
            arrival: now,
            profile,
        };
        let dropped = InvocationOutcome {
            info,
            work,
            server: None,
            cold: false,
            first_run: None,
            finish: None,
            inside: None,
        };
        let s = match router.route(now, &info, &self.views) {
            Choice::Drop => {
                self.stats.dropped_by_router += 1;
                return self.settle(dropped, client, router, sink, clients);
            }
            Choice::Server(s) if (s.0 as usize) < self.servers.len() => s,
            Choice::Server(s) => {
                return Err(ClusterError::Route {
                    policy: router.name().to_owned(),
                    what: format!(
                        "sent invocation {} to server {}, of {} servers",
                        id.0,
                        s.0,
                        self.servers.len()
                    ),
                });
            }
        };
        let i = s.0 as usize;
        self.servers[i].stats.routed += 1;
        let w = Waiting {
            info,
            work,
            client,
            deadline: self.memory_wait.map(|d| now.saturating_add(d)),
        };
        // No overtaking: while any invocation waits on the server, a new one
        // waits behind it, even one an idle warm container could serve.
        if self.servers[i].waiting.is_empty() && self.start(s, &w)? {
            self.reschedule(i);
            self.changed(i, router);
            return Ok(());
        }
        let srv = &mut self.servers[i];
        let never = profile.memory_mb as u64 > srv.pool.memory_mb()
            || (srv.waiting.is_empty() && srv.stuck());
        if never || self.memory_wait == Some(0) {
            srv.stats.drops += 1;
            self.stats.dropped_for_memory += 1;
            self.reschedule(i);
            let dropped = InvocationOutcome {
                server: Some(s),
                ..dropped
            };
            return self.settle(dropped, client, router, sink, clients);
        }
        srv.stats.waits += 1;
        srv.waiting.push_back(w);
        self.waiting += 1;
        self.reschedule(i);
        Ok(())
    }

    /// Starts `w` on server `s` now if it can: in the most recently idle
    /// warm container of its function, else in a new one once the
    /// keep-alive has evicted enough idle ones; false if it cannot fit.
    /// Cores that take containers when they first run an invocation are
    /// handed it at once, its container theirs to take.
    fn start<E>(&mut self, s: ServerId, w: &Waiting) -> Result<bool, ClusterError<E>> {
        let now = self.now;
        let i = s.0 as usize;
        let profile = w.info.profile;
        let (container, cold) = if U::BINDS_AT_FIRST_RUN {
            (None, false)
        } else {
            match self.with_containers(i, |_, bind| Ok(bind.take(now, profile)))? {
                Some((c, cold)) => (Some(c), cold),
                None => return Ok(false),
            }
        };
        self.with_containers(i, |cpu, bind| cpu.advance(now, bind))?;
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.flight.push(None);
                (self.flight.len() - 1) as u32
            }
        };
        let id = w.info.id;
        let extra = if cold { profile.cold_extra() } else { 0 };
        let wall = self.cold_start == ColdStart::Wall && extra > 0;
        self.flight[slot as usize] = Some(Flight {
            info: w.info,
            work: w.work,
            server: s,
            container,
            cold,
            refused: false,
            added: if wall { now + extra } else { now },
            client: w.client,
        });
        self.in_flight += 1;
        self.views.get_mut(s).running += 1;
        if wall {
            let srv = &mut self.servers[i];
            srv.starting.push(Reverse((now + extra, id, slot)));
            srv.cpu.set_starting(srv.starting.len() as u64);
            return Ok(true);
        }
        // A cold start's extra is CPU here: one in wall time waits above.
        let job = Job {
            slot,
            id,
            function: profile.function,
            work: w.work.saturating_add(extra),
            estimate: profile.warm.saturating_add(extra),
            warm: profile.warm,
            memory_mb: profile.memory_mb,
        };
        self.with_containers(i, |cpu, bind| cpu.add(job, bind))?;
        Ok(true)
    }

    /// Runs `f` on server `i`'s cores with its containers at hand
    /// ([`Binder`]); errs as the cores or the keep-alive did.
    fn with_containers<E, T>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut U, &mut Binder<'_, K>) -> Result<T, String>,
    ) -> Result<T, ClusterError<E>> {
        let server = ServerId(i as u32);
        let srv = &mut self.servers[i];
        let mut bind = Binder {
            server,
            pool: &mut srv.pool,
            stats: &mut srv.stats,
            views: &mut self.views,
            flight: &mut self.flight,
            next_container: &mut self.next_container,
            dropped_for_memory: &mut self.stats.dropped_for_memory,
            broke: None,
        };
        let done = f(&mut srv.cpu, &mut bind);
        if let Some(what) = bind.broke {
            return Err(ClusterError::KeepAlive {
                policy: srv.pool.keep().name().to_owned(),
                server,
                what,
            });
        }
        done.map_err(|what| ClusterError::Server { server, what })
    }

    /// Serves server `i`'s invocations waiting for memory, head first: the
    /// head starts if it fits now (after memory was freed), else it is
    /// dropped if its wait is up or nothing can free memory for it any
    /// more, else it and everything behind it wait on. Whether any started.
    fn serve_waiting<E, R, S, C>(
        &mut self,
        i: usize,
        router: &mut R,
        sink: &mut S,
        clients: &mut C,
    ) -> Result<bool, ClusterError<E>>
    where
        R: Route + ?Sized,
        S: ClusterSink,
        C: Clients + ?Sized,
    {
        let now = self.now;
        let s = ServerId(i as u32);
        let mut started = false;
        while let Some(w) = self.servers[i].waiting.pop_front() {
            if self.start(s, &w)? {
                self.waiting -= 1;
                self.servers[i].stats.wait_time += now - w.info.arrival;
                started = true;
                continue;
            }
            let srv = &mut self.servers[i];
            if w.deadline.is_none_or(|d| d > now) && !srv.stuck() {
                srv.waiting.push_front(w);
                break;
            }
            self.waiting -= 1;
            srv.stats.wait_time += now - w.info.arrival;
            srv.stats.drops += 1;
            srv.stats.drops_after_wait += 1;
            self.stats.dropped_for_memory += 1;
            let dropped = InvocationOutcome {
                info: w.info,
                work: w.work,
                server: Some(s),
                cold: false,
                first_run: None,
                finish: None,
                inside: None,
            };
            self.settle(dropped, w.client, router, sink, clients)?;
        }
        Ok(started)
    }
    /// Server `i`'s invocations whose work is done finish now.
    fn finish<E, R, S, C>(
        &mut self,
        i: usize,
        router: &mut R,
        sink: &mut S,
        clients: &mut C,
    ) -> Res<E>
    where
        R: Route + ?Sized,
        S: ClusterSink,
        C: Clients + ?Sized,
    {
        let now = self.now;
        let s = ServerId(i as u32);
        let mut done = std::mem::take(&mut self.done);
        // Their containers go idle (those the cores bound at first run
        // already have) before any outcome is handed out.
        self.with_containers(i, |cpu, bind| {
            cpu.advance(now, bind)?;
            while let Some(d) = cpu.pop_done() {
                bind.done(d.slot, now);
                done.push(d);
            }
            Ok(())
        })?;
        for d in &done {
            let Some(f) = self.flight[d.slot as usize].take() else {
                continue;
            };
            self.free.push(d.slot);
            self.in_flight -= 1;
            let view = self.views.get_mut(s);
            view.running = view.running.saturating_sub(1);
            if d.finish.is_some() {
                self.stats.finished += 1;
                self.last_finish = d.finish;
            } else if !f.refused {
                // A refused one was counted as dropped for memory then.
                self.servers[i].stats.node_drops += 1;
                self.stats.dropped_by_server += 1;
            }
            let outcome = InvocationOutcome {
                info: f.info,
                work: f.work,
                server: Some(f.server),
                cold: f.cold,
                // Finished work the cores name no first run for ran from
                // the instant it was added.
                first_run: d.first_run.or(d.finish.and(Some(f.added))),
                finish: d.finish,
                inside: d.inside,
            };
            self.settle(outcome, f.client, router, sink, clients)?;
        }
        let any = !done.is_empty();
        done.clear();
        self.done = done;
        let started = any && self.serve_waiting(i, router, sink, clients)?;
        self.reschedule(i);
        if any || started {
            self.changed(i, router);
        }
        Ok(())
    }

    /// Server `i`'s cold starts due by now are done: their invocations
    /// run.
    fn ready<E>(&mut self, i: usize) -> Res<E> {
        let now = self.now;
        self.with_containers(i, |cpu, bind| cpu.advance(now, bind))?;
        while let Some(&Reverse((at, id, slot))) = self.servers[i].starting.peek()
            && at <= now
        {
            self.servers[i].starting.pop();
            if let Some(f) = self.flight[slot as usize].as_ref() {
                let job = Job {
                    slot,
                    id,
                    function: f.info.profile.function,
                    work: f.work,
                    estimate: f.info.profile.warm,
                    warm: f.info.profile.warm,
                    memory_mb: f.info.profile.memory_mb,
                };
                self.with_containers(i, |cpu, bind| cpu.add(job, bind))?;
            }
        }
        let srv = &mut self.servers[i];
        srv.cpu.set_starting(srv.starting.len() as u64);
        self.reschedule(i);
        Ok(())
    }

    /// Server `i`'s keep-alive lets its expired containers go.
    fn expire<E>(&mut self, i: usize) -> Res<E> {
        let now = self.now;
        let s = ServerId(i as u32);
        let srv = &mut self.servers[i];
        let mut expired = std::mem::take(&mut self.expired);
        srv.pool.keep_mut().expired(now, &mut expired);
        let breach = |srv: &Server<K, U>, what: String| ClusterError::KeepAlive {
            policy: srv.pool.keep().name().to_owned(),
            server: s,
            what,
        };
        for &id in &expired {
            let f = srv
                .pool
                .remove_idle(id)
                .map_err(|what| breach(srv, format!("said container {} expired, {what}", id.0)))?;
            self.views.remove_warm(s, f);
            srv.stats.expirations += 1;
        }
        expired.clear();
        self.expired = expired;
        if let Some(at) = srv.pool.keep().next_expiry()
            && at <= now
        {
            return Err(breach(
                srv,
                format!(
                    "still names an expiry at {at} ns after expiring every container due by {now} ns"
                ),
            ));
        }
        self.reschedule(i);
        Ok(())
    }

    /// Serves server `i`'s waiting invocations after memory was freed or a
    /// wait ran out, and moves its timers.
    fn serve_and_reschedule<E, R, S, C>(
        &mut self,
        i: usize,
        router: &mut R,
        sink: &mut S,
        clients: &mut C,
    ) -> Res<E>
    where
        R: Route + ?Sized,
        S: ClusterSink,
        C: Clients + ?Sized,
    {
        let started = self.serve_waiting(i, router, sink, clients)?;
        self.reschedule(i);
        if started {
            self.changed(i, router);
        }
        Ok(())
    }

    /// Hands a final outcome out (a finished one's finish the transport
    /// later: when its client has it), and asks its client for the next.
    fn settle<E, R, S, C>(
        &mut self,
        mut outcome: InvocationOutcome,
        client: Option<u32>,
        router: &mut R,
        sink: &mut S,
        clients: &mut C,
    ) -> Res<E>
    where
        R: Route + ?Sized,
        S: ClusterSink,
        C: Clients + ?Sized,
    {
        let answered = self.now.saturating_add(self.transport);
        if outcome.finish.is_some() {
            outcome.finish = Some(answered);
        }
        router.on_finish(self.now, &outcome);
        sink.outcome(outcome);
        match client {
            Some(c) => self.ask(c, answered, clients),
            None => Ok(()),
        }
    }

    /// Moves server `i`'s finish, ready, expiry and wait timers to where
    /// they are due now (the wait timer at the head's deadline: waits end
    /// in arrival order, as every invocation may wait as long).
    fn reschedule(&mut self, i: usize) {
        let now = self.now;
        let srv = &mut self.servers[i];
        let s = i as u32;
        self.timers.set(Timer::Finish(s), srv.cpu.next_at());
        let ready = srv.starting.peek().map(|&Reverse((at, _, _))| at);
        self.timers.set(Timer::Ready(s), ready);
        let expiry = srv.pool.keep().next_expiry().map(|t| t.max(now));
        self.timers.set(Timer::Expire(s), expiry);
        let wait = srv
            .waiting
            .front()
            .and_then(|w| w.deadline)
            .map(|t| t.max(now));
        self.timers.set(Timer::Wait(s), wait);
    }

    /// Server `i`'s invocations in flight changed: with fresh loads, it
    /// publishes its exact load.
    fn changed<R: Route + ?Sized>(&mut self, i: usize, router: &mut R) {
        if self.loads == Loads::Published {
            return;
        }
        let srv = &self.servers[i];
        let view = self.views.get_mut(ServerId(i as u32));
        view.load = srv.active() as f64 / srv.cores as f64;
        view.published = self.now;
        router.on_loads(self.now, &self.views);
    }

    /// The periodic publication: every server's load average (unless loads
    /// are fresh), and a sample of the loads' spread.
    fn publish_all<R: Route + ?Sized>(&mut self, router: &mut R) {
        let now = self.now;
        if self.loads == Loads::Published {
            for (i, srv) in self.servers.iter().enumerate() {
                let view = self.views.get_mut(ServerId(i as u32));
                view.load = srv.load.shown() / srv.cores as f64;
                view.published = now;
            }
        }
        let n = self.views.len() as f64;
        let mean = self.views.iter().map(|(_, v)| v.load).sum::<f64>() / n;
        let variance = self
            .views
            .iter()
            .map(|(_, v)| (v.load - mean) * (v.load - mean))
            .sum::<f64>()
            / n;
        self.stats.loads.push(now, mean, variance);
        if self.loads == Loads::Published {
            router.on_loads(now, &self.views);
        }
    }

    /// Ends the run: its stats, or the first server whose cores were left
    /// with work nothing will run.
    pub(crate) fn end<E>(mut self) -> Result<ClusterStats, ClusterError<E>> {
        self.stats.span = match (self.first_arrival, self.last_finish) {
            (Some(a), Some(f)) => f.saturating_sub(a),
            _ => 0,
        };
        let mut servers = Vec::with_capacity(self.servers.len());
        for (i, mut srv) in self.servers.into_iter().enumerate() {
            srv.stats.busy = srv.cpu.busy();
            srv.stats.inside = srv.cpu.end().map_err(|what| ClusterError::Server {
                server: ServerId(i as u32),
                what,
            })?;
            servers.push(srv.stats);
        }
        self.stats.servers = servers;
        Ok(self.stats)
    }
}

/// One server's containers as its cores and the engine take and give them
/// back: the engine as an invocation starts ([`Binder::take`]), or cores
/// that bind at first run ([`Bind`]).
struct Binder<'a, K> {
    server: ServerId,
    pool: &'a mut ContainerPool<K>,
    stats: &'a mut ServerStats,
    views: &'a mut Servers,
    flight: &'a mut [Option<Flight>],
    next_container: &'a mut u64,
    dropped_for_memory: &'a mut u64,
    /// How the keep-alive first broke its contract, if it did.
    broke: Option<String>,
}

impl<K> Binder<'_, K>
where
    K: DerefMut,
    K::Target: KeepAlive,
{
    /// Takes the most recently idle warm container of `profile`'s
    /// function at `at`, else makes a new one (cold) once the keep-alive
    /// has evicted enough idle ones: the container, and whether it is
    /// cold; `None` if it cannot fit (or the keep-alive broke its
    /// contract, [`Binder::broke`]).
    fn take(&mut self, at: Time, profile: FunctionProfile) -> Option<(ContainerId, bool)> {
        let (server, function) = (self.server, profile.function);
        if let Some(c) = self.pool.take_idle(at, function) {
            self.views.remove_warm(server, function);
            self.stats.warm_starts += 1;
            return Some((c, false));
        }
        let (views, stats) = (&mut *self.views, &mut *self.stats);
        let fits = self.pool.make_room(at, profile.memory_mb as u64, |_, f| {
            views.remove_warm(server, f);
            stats.evictions += 1;
        });
        match fits {
            Ok(true) => {}
            Ok(false) => return None,
            Err(what) => {
                self.broke.get_or_insert(what);
                return None;
            }
        }
        let c = ContainerId(*self.next_container);
        *self.next_container += 1;
        self.pool.create(at, c, profile);
        stats.max_memory_mb = stats.max_memory_mb.max(self.pool.used_mb());
        stats.cold_starts += 1;
        Some((c, true))
    }
}

impl<K> Bind for Binder<'_, K>
where
    K: DerefMut,
    K::Target: KeepAlive,
{
    fn first_run(&mut self, slot: u32, at: Time) -> Start {
        const IN_FLIGHT: &str = "cores run only invocations in flight";
        let profile = self.flight[slot as usize]
            .as_ref()
            .expect(IN_FLIGHT)
            .info
            .profile;
        let taken = self.take(at, profile);
        let f = self.flight[slot as usize].as_mut().expect(IN_FLIGHT);
        match taken {
            Some((c, cold)) => {
                f.container = Some(c);
                f.cold = cold;
                Start::Run(if cold { profile.cold_extra() } else { 0 })
            }
            None => {
                f.refused = true;
                if self.broke.is_none() {
                    self.stats.drops += 1;
                    *self.dropped_for_memory += 1;
                }
                Start::Refuse
            }
        }
    }

    fn done(&mut self, slot: u32, at: Time) {
        let container = self.flight[slot as usize]
            .as_mut()
            .and_then(|f| f.container.take());
        if let Some(c) = container
            && let Some(function) = self.pool.release(at, c)
        {
            self.views.add_warm(self.server, function);
        }
    }
}
