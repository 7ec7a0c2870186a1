//! Every cluster router and keep-alive policy by the name the CLI and the
//! outputs use. A `--policy` list is looked up once into [`RouterSpec`]s;
//! each builds a fresh [`Route`] per run, seeded by the run's seed.

use crate::catalogue::{Catalogue, Entry};
use anyhow::Result;
use faasched_model::cluster::{KeepAlive, Route};
use faasched_policy::cluster::{
    ChBl, ChRlu, ChRluParams, Greedy, GreedyDual, LeastLoaded, Lru, OpenWhisk, PowerOfTwo, Random,
    RoundRobin, Sampling, Ttl, Variant,
};

/// One router of the catalogue.
#[derive(Debug)]
pub struct RouterSpec {
    /// The name `--policy` and every output use.
    pub name: &'static str,
    /// What it does, in a line.
    pub about: &'static str,
    build: fn(u64) -> Result<Box<dyn Route + Send>>,
}

impl RouterSpec {
    /// A fresh router, its random draws seeded by `seed`.
    pub fn build(&self, seed: u64) -> Result<Box<dyn Route + Send>> {
        (self.build)(seed)
    }
}

fn ch_rlu(variant: Variant, seed: u64) -> Result<Box<dyn Route + Send>> {
    let params = ChRluParams {
        variant,
        ..ChRluParams::default()
    };
    Ok(Box::new(ChRlu::with_params(params, seed)?))
}

/// The paper's CH-RLU with one part changed, answering to `name`.
fn ablated(
    name: &'static str,
    seed: u64,
    change: impl FnOnce(&mut ChRluParams),
) -> Result<Box<dyn Route + Send>> {
    let mut params = ChRluParams::default();
    change(&mut params);
    Ok(Box::new(ChRlu::with_params(params, seed)?.named(name)))
}

/// Every router, with a line each (for `--help` and errors).
pub static ROUTERS: Catalogue<RouterSpec> = Catalogue {
    kind: "cluster policy",
    note: Some("each may name its servers' keep-alive as ROUTER:KEEP-ALIVE"),
    entries: ROUTER_SPECS,
};

static ROUTER_SPECS: &[RouterSpec] = &[
    RouterSpec {
        name: "ch-rlu",
        about: "CH-RLU (Alg. 2): home server on a hash ring, forwarded while the stale load (plus noise for popular functions) passes min(cold/warm x 1.2, 6); after 3 forwards the least loaded, or drop",
        build: |seed| ch_rlu(Variant::Paper, seed),
    },
    RouterSpec {
        name: "ch-rlu-code",
        about: "ch-rlu as the authors' OpenWhisk code tests it: popular load + noise <= 1.2, others load <= min(c/w, 1.2(b+1)) - 1; past the whole ring a random server",
        build: |seed| ch_rlu(Variant::OpenWhiskCode, seed),
    },
    RouterSpec {
        name: "ch-rlu-iluvatar",
        about: "ch-rlu as Iluvatar runs it: unpopular functions always at home, popular ones walk the ring, fallback home",
        build: |seed| ch_rlu(Variant::Iluvatar, seed),
    },
    RouterSpec {
        name: "ch-rlu-no-noise",
        about: "ablation: ch-rlu without the noise on popular functions' loads",
        build: |seed| ablated("ch-rlu-no-noise", seed, |p| p.noise_sigma = 0.0),
    },
    RouterSpec {
        name: "ch-rlu-flat-bound",
        about: "ablation: ch-rlu with one bound (1.2) for every function, not raised by cold/warm",
        build: |seed| ablated("ch-rlu-flat-bound", seed, |p| p.b_max = p.b),
    },
    RouterSpec {
        name: "ch-rlu-no-chain",
        about: "ablation: ch-rlu that falls back to the least loaded server as soon as the home server is over its bound",
        build: |seed| ablated("ch-rlu-no-chain", seed, |p| p.max_chain_len = 0),
    },
    RouterSpec {
        name: "ch-rlu-all-sampled",
        about: "ablation: ch-rlu that tracks every function's popularity, not a 20% hash sample",
        build: |seed| {
            ablated("ch-rlu-all-sampled", seed, |p| {
                p.popularity.sampling = Sampling::All
            })
        },
    },
    RouterSpec {
        name: "ch-bl",
        about: "consistent hashing with bounded loads on stale load averages: the ring walk with one bound (1.2) for every function, no noise",
        build: |_| Ok(Box::new(ChBl::new())),
    },
    RouterSpec {
        name: "openwhisk",
        about: "OpenWhisk's balancer: home invoker hash % n, a coprime step, the first whose outstanding memory fits; else a random one",
        build: |seed| Ok(Box::new(OpenWhisk::new(seed))),
    },
    RouterSpec {
        name: "least-loaded",
        about: "the server with the lowest stale load, locality-agnostic",
        build: |_| Ok(Box::new(LeastLoaded::new())),
    },
    RouterSpec {
        name: "random",
        about: "a server drawn uniformly",
        build: |seed| Ok(Box::new(Random::new(seed))),
    },
    RouterSpec {
        name: "round-robin",
        about: "the servers in turn",
        build: |_| Ok(Box::new(RoundRobin::new())),
    },
    RouterSpec {
        name: "greedy",
        about: "the paper's simulated baseline: the lowest expected time, (warm if a warm container waits there, else cold) x max(1, stale load), over every server",
        build: |_| Ok(Box::new(Greedy::new())),
    },
    RouterSpec {
        name: "power-of-two",
        about: "ours: the lower stale load of two servers drawn at random",
        build: |seed| Ok(Box::new(PowerOfTwo::new(seed))),
    },
];

/// One keep-alive policy of the catalogue.
#[derive(Debug)]
pub struct KeepAliveSpec {
    /// The name `--keep-alive` and every output use.
    pub name: &'static str,
    /// What it does, in a line.
    pub about: &'static str,
    build: fn() -> Box<dyn KeepAlive + Send>,
}

impl KeepAliveSpec {
    /// A fresh policy for one server.
    pub fn build(&self) -> Box<dyn KeepAlive + Send> {
        (self.build)()
    }
}

/// Every keep-alive policy, with a line each.
pub static KEEP_ALIVES: Catalogue<KeepAliveSpec> = Catalogue {
    kind: "keep-alive policy",
    note: None,
    entries: KEEP_ALIVE_SPECS,
};

static KEEP_ALIVE_SPECS: &[KeepAliveSpec] = &[
    KeepAliveSpec {
        name: "greedy-dual",
        about: "FaasCache's GreedyDual: evict the lowest clock + frequency x cold cost / memory",
        build: || Box::new(GreedyDual::new()),
    },
    KeepAliveSpec {
        name: "ttl",
        about: "OpenWhisk's default: an idle container lives 10 minutes; the least recently used goes first when memory is short",
        build: || Box::new(Ttl::new()),
    },
    KeepAliveSpec {
        name: "lru",
        about: "evict the least recently used idle container when memory is short",
        build: || Box::new(Lru::new()),
    },
];

/// A router to run, with the keep-alive policy its servers use when it is
/// not the run's: `openwhisk:ttl` is OpenWhisk's balancer over servers
/// that keep containers by a TTL (the paper's OW+TTL).
#[derive(Clone, Copy, Debug)]
pub struct Contender {
    /// The router.
    pub router: &'static RouterSpec,
    /// Its servers' keep-alive policy, if not the run's.
    pub keep_alive: Option<&'static KeepAliveSpec>,
}

impl Contender {
    /// Its name as given: the router's, then `:` and the keep-alive's if
    /// it names one.
    pub fn name(&self) -> String {
        match self.keep_alive {
            Some(k) => format!("{}:{}", self.router.name, k.name),
            None => self.router.name.to_string(),
        }
    }
}

impl Entry for RouterSpec {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }
}

impl Entry for KeepAliveSpec {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }
}

/// The contenders of a `--policy` list (`ROUTER` or `ROUTER:KEEP-ALIVE`),
/// in its order; an unknown name or a repeat is refused, naming it and the
/// catalogue.
pub fn contenders(names: &[String]) -> Result<Vec<Contender>> {
    let lookup = |given: &str| {
        let (name, keep_alive) = match given.split_once(':') {
            Some((r, k)) => (r, Some(KEEP_ALIVES.lookup(k)?)),
            None => (given, None),
        };
        Ok(Contender {
            router: ROUTERS.lookup(name)?,
            keep_alive,
        })
    };
    Ok(ROUTERS.list(names, lookup, Contender::name)?)
}

/// The keep-alive policy named `name`; an unknown name is refused, naming
/// the catalogue.
pub fn keep_alive(name: &str) -> Result<&'static KeepAliveSpec> {
    Ok(KEEP_ALIVES.lookup(name)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_the_policy_that_answers_to_it() {
        for spec in ROUTERS.iter() {
            assert_eq!(spec.build(1).unwrap().name(), spec.name);
        }
        for spec in KEEP_ALIVES.iter() {
            assert_eq!(spec.build().name(), spec.name);
        }
    }

    #[test]
    fn unknown_and_repeated_names_are_refused_naming_them() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let err = contenders(&names(&["ch-rlu", "nope"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`nope`") && err.contains("least-loaded"),
            "{err}"
        );
        let err = contenders(&names(&["greedy", "greedy"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("twice"), "{err}");
        assert!(contenders(&[]).is_err());
        let err = contenders(&names(&["openwhisk:fifo"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`fifo`"), "{err}");
        let both = contenders(&names(&["openwhisk", "openwhisk:ttl"])).unwrap();
        let named: Vec<String> = both.iter().map(Contender::name).collect();
        assert_eq!(named, ["openwhisk", "openwhisk:ttl"]);
        assert_eq!(both[1].keep_alive.unwrap().name, "ttl");
        let err = keep_alive("fifo").unwrap_err().to_string();
        assert!(
            err.contains("`fifo`") && err.contains("greedy-dual"),
            "{err}"
        );
        assert_eq!(keep_alive("ttl").unwrap().name, "ttl");
    }
}
