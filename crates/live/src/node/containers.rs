//! A node's containers, live: warm copies of functions kept within the
//! node's memory by the cluster simulator's keep-alive policies, and the
//! cold starts that make them.
//!
//! A function of the node's table (a cluster workload's: memory, warm and
//! cold time) runs in a container. A request for it takes the most recently
//! idle container of its function (a warm start) or starts a new one cold:
//! the keep-alive evicts idle containers until the new one's memory fits
//! (the request is refused, overloaded, if it cannot), the function's
//! compiled code is loaded again on its own (read from the node's disk
//! cache, or compiled without one, and linked: the real work of a cold
//! start, [`faasched_wasm::Image`]), and the worker then waits what the
//! node's [`ColdStart`] says a container's start adds beyond that (by
//! default nothing for a real function, whose load is its cold start). The
//! request's sandbox is the container's first instance. What each cold
//! start cost is kept per function ([`ColdStarts`]). When the request's
//! sandbox goes, its container goes idle for the keep-alive to keep or
//! evict, its code held, and its memory counted as its table row says.
//! The bookkeeping is the simulator's own ([`ContainerPool`]), so the two
//! worlds keep and evict alike.
//!
//! A warm container holds its function's compiled and linked code, not an
//! instance: every request runs in a fresh instance (as `wasmtime serve`
//! and Spin run theirs: a WASI command runs once, and a fresh instance is
//! microseconds from a pooling allocator), so what a container keeps warm
//! is the load, and the memory it is charged is its table row's, not its
//! instances' (a simplification: a platform's container holds a process
//! whose memory the row measured).
//!
//! Functions outside the table run from the runtime's own copy, as they do
//! without containers.

use super::invoke::Failure;
use crate::wire::response;
use faasched_model::cluster::{ContainerId, ContainerPool, FunctionProfile, KeepAlive};
use faasched_model::{Nanos, Time};
use faasched_wasm::{Image, Loader};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a cold start waits after loading the function, for what starting
/// a container (a process, a language runtime, the function's imports)
/// costs a platform beyond loading WebAssembly.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ColdStart {
    /// The wait is this share of the function's cold − warm time in its
    /// table, for every function. `None`: a share of 1 for a built-in
    /// (`spin` standing in for a table's function: loading it costs nothing
    /// of the function it stands for) and none for a real function, whose
    /// cold start is what loading it costs here.
    pub wait: Option<f64>,
}

impl ColdStart {
    /// The share of cold − warm a cold start of a built-in (`builtin`) or
    /// a real function waits.
    pub fn share(&self, builtin: bool) -> f64 {
        self.wait.unwrap_or(if builtin { 1.0 } else { 0.0 })
    }

    fn delay(&self, profile: &FunctionProfile, builtin: bool) -> Duration {
        Duration::from_nanos((profile.cold_extra() as f64 * self.share(builtin)).round() as u64)
    }
}

/// What one function's cold starts cost on this node: loading its code
/// (the disk cache's read or a compile, and the link) and the wait after.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColdStarts {
    /// Cold starts that loaded it.
    pub count: u64,
    /// Their loads' wall time, ns.
    pub load: Nanos,
    /// The longest load, ns.
    pub max_load: Nanos,
    /// Their waits after loading, ns.
    pub wait: Nanos,
}

impl ColdStarts {
    /// The mean load, ns (0 without a cold start).
    pub fn mean_load(&self) -> Nanos {
        self.load / self.count.max(1)
    }

    /// The mean wait, ns (0 without a cold start).
    pub fn mean_wait(&self) -> Nanos {
        self.wait / self.count.max(1)
    }

    fn add(&mut self, load: Duration, wait: Duration) {
        let ns = |d: Duration| Nanos::try_from(d.as_nanos()).unwrap_or(Nanos::MAX);
        self.count += 1;
        self.load = self.load.saturating_add(ns(load));
        self.max_load = self.max_load.max(ns(load));
        self.wait = self.wait.saturating_add(ns(wait));
    }
}

/// What the node's containers did, for `/metrics` and `/status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContainerStats {
    /// Requests that started in a new container.
    pub cold_starts: u64,
    /// Requests that took an idle warm container.
    pub warm_starts: u64,
    /// Idle containers the keep-alive evicted for memory.
    pub evictions: u64,
    /// Idle containers the keep-alive let expire.
    pub expirations: u64,
    /// Requests refused: no memory could be freed for their container.
    pub refused: u64,
    /// Memory of every container now, MB.
    pub used_mb: u64,
    /// Containers now, busy or idle.
    pub containers: u64,
}

struct State {
    pool: ContainerPool<Box<dyn KeepAlive + Send>>,
    /// Each container's compiled function; `None` while it compiles.
    images: HashMap<ContainerId, Option<Arc<Image>>>,
    next: u64,
    stats: ContainerStats,
    /// Each loaded function's cold starts, by its name.
    loads: BTreeMap<String, ColdStarts>,
}

/// A node's containers. Shared by its workers.
pub struct Containers {
    state: Mutex<State>,
    profiles: HashMap<String, FunctionProfile>,
    cold_start: ColdStart,
    /// Time zero of the keep-alive's clock.
    epoch: Instant,
}

impl std::fmt::Debug for Containers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Containers")
            .field("functions", &self.profiles.len())
            .field("cold_start", &self.cold_start)
            .finish_non_exhaustive()
    }
}

/// A request's hold on its container: the function to start the sandbox
/// from. Dropping it (the request's sandbox is gone) makes the container
/// idle.
pub struct Lease {
    containers: Arc<Containers>,
    id: ContainerId,
    image: Arc<Image>,
    cold: bool,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("container", &self.id.0)
            .field("function", &self.image.name())
            .field("cold", &self.cold)
            .finish()
    }
}

impl Lease {
    /// The container's compiled function.
    pub fn image(&self) -> &Image {
        &self.image
    }

    /// Whether the request started its container cold.
    pub fn cold(&self) -> bool {
        self.cold
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let now = self.containers.now();
        self.containers.lock().pool.release(now, self.id);
    }
}

impl Containers {
    /// `memory_mb` of containers for the functions of `table` (by name),
    /// kept by `keep`.
    pub fn new(
        memory_mb: u64,
        keep: Box<dyn KeepAlive + Send>,
        table: impl IntoIterator<Item = (String, FunctionProfile)>,
        cold_start: ColdStart,
    ) -> Containers {
        Containers {
            state: Mutex::new(State {
                pool: ContainerPool::new(memory_mb, keep),
                images: HashMap::new(),
                next: 0,
                stats: ContainerStats::default(),
                loads: BTreeMap::new(),
            }),
            profiles: table.into_iter().collect(),
            cold_start,
            epoch: Instant::now(),
        }
    }

    fn now(&self) -> Time {
        self.epoch.elapsed().as_nanos() as Time
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `function` runs in containers here.
    pub fn holds(&self, function: &str) -> bool {
        self.profiles.contains_key(function)
    }

    /// What the containers did so far.
    pub fn stats(&self) -> ContainerStats {
        let state = self.lock();
        ContainerStats {
            used_mb: state.pool.used_mb(),
            containers: state.images.len() as u64,
            ..state.stats
        }
    }

    /// Each function's cold starts so far, by the name of its module.
    pub fn cold_starts(&self) -> BTreeMap<String, ColdStarts> {
        self.lock().loads.clone()
    }

    /// Forgets what `function`'s cold starts cost: it was removed, and a
    /// function registered under its name later is other code (its idle
    /// containers are evicted when next asked for).
    pub fn forget(&self, function: &str) {
        self.lock().loads.remove(function);
    }

    /// The containers' counters and gauges, in Prometheus text format.
    pub fn write_metrics(&self, out: &mut String) {
        let s = self.stats();
        response::counters(
            out,
            "faasched_node",
            &[
                (
                    "cold_starts",
                    "Requests that started a new container.",
                    s.cold_starts,
                ),
                (
                    "warm_starts",
                    "Requests that took an idle warm container.",
                    s.warm_starts,
                ),
                (
                    "evictions",
                    "Idle containers evicted for memory.",
                    s.evictions,
                ),
                (
                    "expirations",
                    "Idle containers the keep-alive let expire.",
                    s.expirations,
                ),
                (
                    "refused",
                    "Requests refused: no memory could be freed.",
                    s.refused,
                ),
            ],
        );
        for (name, help, value) in [
            (
                "container_memory_mb",
                "Memory of every container, busy or idle, MB.",
                s.used_mb,
            ),
            ("containers", "Containers, busy or idle.", s.containers),
        ] {
            response::single(out, &format!("faasched_node_{name}"), help, "gauge", value);
        }
        let loads = self.cold_starts();
        fn seconds(ns: Nanos) -> f64 {
            ns as f64 / 1e9
        }
        /// A family's name, help, type and value of a function's cold starts.
        type Family = (
            &'static str,
            &'static str,
            &'static str,
            fn(&ColdStarts) -> f64,
        );
        let families: [Family; 4] = [
            (
                "cold_start_loads_total",
                "Cold starts that loaded the function's code, by function.",
                "counter",
                |c| c.count as f64,
            ),
            (
                "cold_start_load_seconds_total",
                "Wall time cold starts spent loading the function's code (disk cache or compile, and link), by function.",
                "counter",
                |c| seconds(c.load),
            ),
            (
                "cold_start_load_max_seconds",
                "The longest load of the function's code a cold start took, by function.",
                "gauge",
                |c| seconds(c.max_load),
            ),
            (
                "cold_start_wait_seconds_total",
                "Wall time cold starts waited after loading (--cold-wait), by function.",
                "counter",
                |c| seconds(c.wait),
            ),
        ];
        for (name, help, kind, value) in families {
            let name = format!("faasched_node_{name}");
            response::family(out, &name, help, kind);
            for (function, c) in &loads {
                let _ = writeln!(out, "{name}{{function=\"{function}\"}} {}", value(c));
            }
        }
    }

    /// The containers' state for `GET /status`.
    pub fn status(&self) -> serde_json::Value {
        let s = self.stats();
        let (memory_mb, keep_alive) = {
            let state = self.lock();
            (state.pool.memory_mb(), state.pool.keep().name().to_string())
        };
        serde_json::json!({
            "functions": self.profiles.len(),
            "memory_mb": memory_mb,
            "keep_alive": keep_alive,
            "cold_wait": self.cold_start.wait,
            "cold_start_loads": self.cold_starts().iter().map(|(function, c)| {
                let ms = |ns: Nanos| ns as f64 / 1e6;
                (function.clone(), serde_json::json!({
                    "count": c.count,
                    "load_ms_mean": ms(c.mean_load()),
                    "load_ms_max": ms(c.max_load),
                    "wait_ms_total": ms(c.wait),
                }))
            }).collect::<serde_json::Map<_, _>>(),
            "cold_starts": s.cold_starts,
            "warm_starts": s.warm_starts,
            "evictions": s.evictions,
            "expirations": s.expirations,
            "refused": s.refused,
            "used_mb": s.used_mb,
            "containers": s.containers,
        })
    }

    /// A container for a request of `label` whose function `loader`
    /// loads: a warm one holding that code, or a new one started cold on
    /// the calling thread (its code loaded, then the cold start's wait);
    /// `None` for a function outside the table. Overloaded when no memory
    /// can be freed for it. An idle container of the label holding other
    /// code (another function sent under the label, or one registered
    /// again since) is evicted, never run.
    pub fn acquire(
        self: &Arc<Self>,
        label: &str,
        loader: Loader,
    ) -> Result<Option<Lease>, Failure> {
        let Some(&profile) = self.profiles.get(label) else {
            return Ok(None);
        };
        let now = self.now();
        let id = {
            let mut state = self.lock();
            let state = &mut *state;
            self.expire(now, state)?;
            if let Some(id) = state.pool.take_idle(now, profile.function) {
                let image = state.images.get(&id).cloned().flatten().ok_or_else(|| {
                    Failure::Internal(format!("warm container {} has no image", id.0))
                })?;
                if loader.loaded(&image) {
                    state.stats.warm_starts += 1;
                    return Ok(Some(self.lease(id, image, false)));
                }
                state.pool.release(now, id);
                state.pool.remove_idle(id).map_err(|what| {
                    Failure::Internal(format!("evicting container {}: {what}", id.0))
                })?;
                state.images.remove(&id);
                state.stats.evictions += 1;
            }
            let (images, stats) = (&mut state.images, &mut state.stats);
            let fits = state
                .pool
                .make_room(now, u64::from(profile.memory_mb), |id, _| {
                    images.remove(&id);
                    stats.evictions += 1;
                })
                .map_err(|what| Failure::Internal(format!("keep-alive: {what}")))?;
            if !fits {
                state.stats.refused += 1;
                return Err(Failure::Overloaded);
            }
            let id = ContainerId(state.next);
            state.next += 1;
            state.pool.create(now, id, profile);
            state.images.insert(id, None);
            state.stats.cold_starts += 1;
            id
        };
        // Outside the lock: other workers' warm starts go on meanwhile.
        let loading = Instant::now();
        let function = loader.name().to_owned();
        let wait = self.cold_start.delay(&profile, loader.is_builtin());
        let image = match loader.load() {
            Ok(image) => Arc::new(image),
            Err(fault) => {
                self.discard(id);
                return Err(Failure::Internal(format!(
                    "the cold start of {label} could not compile {function}: {fault}"
                )));
            }
        };
        let load = loading.elapsed();
        std::thread::sleep(wait);
        let mut state = self.lock();
        state.images.insert(id, Some(Arc::clone(&image)));
        state.loads.entry(function).or_default().add(load, wait);
        drop(state);
        Ok(Some(self.lease(id, image, true)))
    }

    fn lease(self: &Arc<Self>, id: ContainerId, image: Arc<Image>, cold: bool) -> Lease {
        Lease {
            containers: Arc::clone(self),
            id,
            image,
            cold,
        }
    }

    /// A container whose cold start failed: gone, its memory back.
    fn discard(&self, id: ContainerId) {
        let now = self.now();
        let mut state = self.lock();
        state.pool.release(now, id);
        let _ = state.pool.remove_idle(id);
        state.images.remove(&id);
    }

    /// Lets the idle containers the keep-alive says expired by `now` go.
    fn expire(&self, now: Nanos, state: &mut State) -> Result<(), Failure> {
        let mut expired = Vec::new();
        state.pool.keep_mut().expired(now, &mut expired);
        for id in expired {
            state.pool.remove_idle(id).map_err(|what| {
                Failure::Internal(format!("keep-alive expired {}: {what}", id.0))
            })?;
            state.images.remove(&id);
            state.stats.expirations += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faasched_model::{FunctionId, MS};
    use faasched_policy::cluster::Lru;

    fn profile(f: u32, memory_mb: u32) -> FunctionProfile {
        FunctionProfile {
            function: FunctionId(f),
            memory_mb,
            warm: MS,
            cold: 3 * MS,
        }
    }

    /// 512 MB for two functions of 256 MB and one of 512, kept by LRU,
    /// cold starts that only compile.
    fn containers() -> Arc<Containers> {
        Arc::new(Containers::new(
            512,
            Box::new(Lru::new()),
            [
                ("a".to_string(), profile(0, 256)),
                ("b".to_string(), profile(1, 256)),
                ("big".to_string(), profile(2, 512)),
            ],
            ColdStart { wait: Some(0.0) },
        ))
    }

    fn runtime() -> faasched_wasm::Runtime {
        let mut config = faasched_wasm::Config::new();
        config.max_sandboxes(8).spin_steps_per_ms(1000);
        faasched_wasm::Runtime::new(&config).unwrap()
    }

    #[test]
    fn a_second_request_takes_the_container_the_first_left_warm() {
        let (c, rt) = (containers(), runtime());
        let first = c.acquire("a", rt.loader("fib").unwrap()).unwrap().unwrap();
        assert!(first.cold());
        assert_eq!(first.image().name(), "fib");
        // Busy: the next request of `a` starts a second container.
        let second = c.acquire("a", rt.loader("fib").unwrap()).unwrap().unwrap();
        assert!(second.cold());
        drop(first);
        let third = c.acquire("a", rt.loader("fib").unwrap()).unwrap().unwrap();
        assert!(!third.cold(), "the idle container is taken warm");
        let s = c.stats();
        assert_eq!(
            (s.cold_starts, s.warm_starts, s.containers, s.used_mb),
            (2, 1, 2, 512)
        );
        // Outside the table: no container.
        assert!(
            c.acquire("noop", rt.loader("noop").unwrap())
                .unwrap()
                .is_none()
        );
        assert!(!c.holds("noop") && c.holds("b"));
    }

    #[test]
    fn memory_held_by_running_requests_refuses_and_idle_memory_is_evicted() {
        let (c, rt) = (containers(), runtime());
        let a = c.acquire("a", rt.loader("spin").unwrap()).unwrap().unwrap();
        let b = c.acquire("b", rt.loader("spin").unwrap()).unwrap().unwrap();
        // Both busy: 512 MB more cannot be freed.
        assert_eq!(
            c.acquire("big", rt.loader("spin").unwrap()).unwrap_err(),
            Failure::Overloaded
        );
        drop(a);
        // Still 256 MB busy.
        assert_eq!(
            c.acquire("big", rt.loader("spin").unwrap()).unwrap_err(),
            Failure::Overloaded
        );
        drop(b);
        let big = c
            .acquire("big", rt.loader("spin").unwrap())
            .unwrap()
            .unwrap();
        assert!(big.cold());
        let s = c.stats();
        assert_eq!(
            (s.evictions, s.refused, s.containers, s.used_mb),
            (2, 2, 1, 512)
        );
        drop(big);
        // `a`'s container was evicted: cold again.
        assert!(
            c.acquire("a", rt.loader("spin").unwrap())
                .unwrap()
                .unwrap()
                .cold()
        );
    }

    /// A warm container runs only the code it loaded: another function
    /// under its label, or its function registered again, evicts it.
    #[test]
    fn an_idle_container_holding_other_code_is_evicted_not_run() {
        let (c, mut rt) = (containers(), runtime());
        let module = |value: i64| {
            format!("(module (func (export \"run\") (param i64) (result i64) i64.const {value}))")
        };
        rt.register("mine", module(1).as_bytes()).unwrap();
        drop(c.acquire("a", rt.loader("mine").unwrap()).unwrap().unwrap());
        assert!(
            !c.acquire("a", rt.loader("mine").unwrap())
                .unwrap()
                .unwrap()
                .cold()
        );
        // `fib` sent under the same label: not `mine`'s container.
        let fib = c.acquire("a", rt.loader("fib").unwrap()).unwrap().unwrap();
        assert!(fib.cold() && fib.image().name() == "fib");
        drop(fib);
        rt.remove("mine").unwrap();
        rt.register("mine", module(2).as_bytes()).unwrap();
        c.forget("mine");
        let again = c.acquire("a", rt.loader("mine").unwrap()).unwrap().unwrap();
        assert!(again.cold(), "registered again: other code");
        let s = c.stats();
        assert_eq!((s.evictions, s.containers), (2, 1));
        assert_eq!(c.cold_starts()["mine"].count, 1, "forgotten, then one more");
    }

    #[test]
    fn a_cold_start_waits_its_share_of_the_tables_cold_time() {
        let p = profile(0, 256);
        let half = ColdStart { wait: Some(0.5) };
        assert_eq!(half.delay(&p, true), Duration::from_millis(1));
        assert_eq!(half.delay(&p, false), Duration::from_millis(1));
        // By default a built-in stands in for the table's function and
        // waits its whole cold − warm; a real function's load is its cold
        // start.
        let default = ColdStart::default();
        assert_eq!(default.delay(&p, true), Duration::from_millis(2));
        assert_eq!(default.delay(&p, false), Duration::ZERO);
    }

    /// Each function's cold starts are kept by its module's name: a
    /// built-in's with its wait, a user module's without one.
    #[test]
    fn every_cold_start_is_counted_with_its_load_and_wait_per_function() {
        let c = Arc::new(Containers::new(
            1024,
            Box::new(Lru::new()),
            [
                ("a".to_string(), profile(0, 256)),
                ("b".to_string(), profile(1, 256)),
            ],
            ColdStart::default(),
        ));
        let mut rt = runtime();
        rt.register(
            "mine",
            b"(module (func (export \"run\") (param i64) (result i64) local.get 0))",
        )
        .unwrap();
        let (first, second) = (
            c.acquire("a", rt.loader("fib").unwrap()).unwrap().unwrap(),
            c.acquire("a", rt.loader("fib").unwrap()).unwrap().unwrap(),
        );
        let mine = c.acquire("b", rt.loader("mine").unwrap()).unwrap().unwrap();
        assert!(first.cold() && second.cold() && mine.cold());
        drop((first, second, mine));
        // Warm: not loaded again.
        let _warm = c.acquire("a", rt.loader("fib").unwrap()).unwrap().unwrap();
        let loads = c.cold_starts();
        assert_eq!(loads.keys().collect::<Vec<_>>(), ["fib", "mine"]);
        let (fib, mine) = (loads["fib"], loads["mine"]);
        assert_eq!((fib.count, fib.wait), (2, 4 * MS));
        assert_eq!((mine.count, mine.wait), (1, 0));
        assert!(fib.load > 0 && fib.max_load <= fib.load && mine.load > 0);
        let mut metrics = String::new();
        c.write_metrics(&mut metrics);
        assert!(
            metrics.contains("faasched_node_cold_start_loads_total{function=\"fib\"} 2\n"),
            "{metrics}"
        );
        assert!(
            metrics.contains("faasched_node_cold_start_wait_seconds_total{function=\"mine\"} 0\n")
        );
        let status = c.status();
        assert_eq!(status["cold_start_loads"]["fib"]["count"], 2);
        assert_eq!(status["cold_start_loads"]["fib"]["wait_ms_total"], 4.0);
    }
}
