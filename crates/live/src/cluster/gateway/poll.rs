//! The nodes' load reports (invariant 5): every period the gateway polls
//! every node's `GET /load` at once, and the table, the router and the
//! load series learn what came back.

use super::link::NodeLink;
use super::{Inner, lock};
use crate::cluster::table::Missed;
use crate::wire::LoadReport;
use bytes::Bytes;
use faasched_model::cluster::loads::spread;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, header};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The shortest time a node's load poll is given: 1 s.
pub const MIN_POLL_TIMEOUT: Duration = Duration::from_secs(1);

/// Polls every period, after the round `serve` ran first.
pub(super) async fn every_period(inner: Arc<Inner>) {
    let period = inner.period;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        inner.poll_round().await;
    }
}

impl Inner {
    /// One poll of every node's load, all at once, each bounded by the
    /// period or [`MIN_POLL_TIMEOUT`]; then the table and the router learn
    /// the results.
    pub(super) async fn poll_round(&self) {
        let links: Vec<(usize, Arc<NodeLink>)> = lock(&self.state)
            .links
            .iter()
            .map(|(&id, link)| (id, Arc::clone(link)))
            .collect();
        let bound = self.period.max(MIN_POLL_TIMEOUT);
        let mut polls = tokio::task::JoinSet::new();
        for (node, link) in links {
            polls.spawn(async move {
                let report = tokio::time::timeout(bound, load(&link)).await;
                (node, report.ok().and_then(Result::ok))
            });
        }
        let mut results = Vec::new();
        while let Some(joined) = polls.join_next().await {
            if let Ok(result) = joined {
                results.push(result);
            }
        }
        self.apply_round(results);
    }

    /// What a poll round learned, `None` for a missed poll, applied to
    /// the table, the router and the load series (invariant 5). A node
    /// that left during the round is left out.
    fn apply_round(&self, mut results: Vec<(usize, Option<LoadReport>)>) {
        let mut state = lock(&self.state);
        let state = &mut *state;
        let now = self.now();
        // In table order, so that of two addresses of one node the first
        // given stays.
        results.sort_by_key(|&(node, _)| node);
        for (node, report) in results {
            match report {
                Some(report) => {
                    if state.alias(node, report.node.as_deref()) {
                        // Another address of a node in the table already:
                        // one node, one entry (the first given).
                        state.table.remove(node);
                        state.links.remove(&node);
                        self.metrics.aliases.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    state.table.report(node, &report, now);
                }
                None => {
                    if state.table.miss(node) == Some(Missed::Dropped) {
                        state.links.remove(&node);
                        self.metrics.node_drops.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        state.router.on_loads(now, state.table.servers());
        state.polls += 1;
        let loads: Vec<f64> = state.table.servers().iter().map(|(_, v)| v.load).collect();
        if let Some((mean, variance)) = spread(&loads) {
            state.loads.push(now, mean, variance);
        }
    }
}

/// `GET /load` of `link`'s node.
pub(super) async fn load(link: &NodeLink) -> Result<LoadReport, String> {
    let request = Request::builder()
        .method(Method::GET)
        .uri("/load")
        .header(header::HOST, link.authority.clone())
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let (response, sender) = link
        .exchange(request)
        .await
        .map_err(|e| e.what().to_owned())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    link.give_back(sender);
    if !status.is_success() {
        return Err(format!("GET /load answered {status}"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("GET /load: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::gateway::{Gateway, GatewayConfig};
    use faasched_model::FunctionId;
    use faasched_model::cluster::FunctionProfile;
    use faasched_policy::cluster::LeastLoaded;

    fn gateway(nodes: &[&str]) -> Gateway {
        let profile = FunctionProfile {
            function: FunctionId(0),
            memory_mb: 128,
            warm: 1_000_000,
            cold: 2_000_000,
        };
        Gateway::new(
            &GatewayConfig::new(nodes.iter().map(|n| n.to_string()).collect()),
            Box::new(LeastLoaded::new()),
            [("f".to_owned(), profile)],
        )
        .unwrap()
    }

    fn report(load: f64) -> Option<LoadReport> {
        Some(LoadReport {
            cores: 2,
            memory_mb: 1024,
            load,
            published_ms: 0,
            seq: 1,
            node: None,
        })
    }

    /// The load series holds, per round, the mean and population variance
    /// of the loads the router sees: the up nodes' last reports, a missed
    /// poll's stale one included, a down node's left out.
    #[test]
    fn every_poll_round_pushes_the_up_nodes_load_mean_and_variance() {
        let g = gateway(&["a:1", "b:2", "c:3"]);
        let inner = &g.inner;
        // Loads 0, 1, 0.5: mean 0.5, variance (0.25 + 0.25 + 0) / 3 = 1/6.
        inner.apply_round(vec![(0, report(0.0)), (1, report(1.0)), (2, report(0.5))]);
        // Node c misses twice, still up at its last 0.5: loads 0.25, 0.75,
        // 0.5, variance (0.0625 + 0.0625 + 0) / 3 = 1/24, twice.
        for _ in 0..2 {
            inner.apply_round(vec![(0, report(0.25)), (1, report(0.75)), (2, None)]);
        }
        // Its third miss takes it down: loads 0 and 1, variance 1/4.
        inner.apply_round(vec![(0, report(0.0)), (1, report(1.0)), (2, None)]);
        let state = lock(&inner.state);
        let loads = &state.loads;
        assert_eq!((state.polls, loads.publications), (4, 4));
        let variances: Vec<f64> = loads.samples.iter().map(|s| s.variance).collect();
        let expected = [1.0 / 6.0, 1.0 / 24.0, 1.0 / 24.0, 0.25];
        for (got, want) in variances.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{variances:?}");
        }
        assert!(loads.samples.iter().all(|s| s.mean == 0.5), "{loads:?}");
        // (4 + 1 + 1 + 6) / 24 / 4 rounds.
        assert!((loads.mean_variance - 0.125).abs() < 1e-12);
    }

    #[test]
    fn a_round_with_no_node_up_counts_but_pushes_nothing() {
        let g = gateway(&[]);
        g.inner.apply_round(Vec::new());
        let state = lock(&g.inner.state);
        assert_eq!((state.polls, state.loads.publications), (1, 0));
        assert_eq!(state.loads.mean_variance, 0.0);
    }
}
