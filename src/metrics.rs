//! Counters and latencies of tool calls, calls in flight and catalog reloads: the one source
//! of the numbers that `/metrics` shows in Prometheus text format and the OTLP exporter sends
//! (`crate::telemetry::observe`). Tool names come from the catalog, not the client: an unknown
//! name is counted as `unknown`, so a client cannot grow the table without bound.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use opentelemetry::KeyValue;

/// Upper bounds of the latency histogram, in seconds.
pub const BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

/// The metrics of one server process.
#[derive(Default)]
pub struct Metrics {
    calls: Mutex<BTreeMap<(String, &'static str), u64>>,
    latency: Mutex<Histogram>,
    http: Mutex<BTreeMap<u16, u64>>,
    in_flight: AtomicU64,
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
    /// The OTLP side, once registered (`crate::telemetry::observe`).
    exported: OnceLock<Exported>,
}

/// What the OTLP exporter reads: the latency histogram this feeds, and the callbacks that read
/// the counters (kept alive as long as the metrics).
pub struct Exported {
    pub latency: opentelemetry::metrics::Histogram<f64>,
    pub _observers: Vec<Box<dyn std::any::Any + Send + Sync>>,
}

/// Counts one call in flight until dropped ([`Metrics::call_started`]).
pub struct InFlight<'a>(&'a Metrics);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Metrics {
    /// Counts one `tools/call` of `tool` (a served tool name or `unknown`) with its outcome
    /// (`ok` or `error`) and duration.
    pub fn record_call(&self, tool: &str, ok: bool, took: Duration) {
        let outcome = if ok { "ok" } else { "error" };
        *lock(&self.calls)
            .entry((tool.to_string(), outcome))
            .or_default() += 1;
        let secs = took.as_secs_f64();
        let mut h = lock(&self.latency);
        for (i, le) in BUCKETS.iter().enumerate() {
            if secs <= *le {
                h.counts[i] += 1;
            }
        }
        h.sum += secs;
        h.count += 1;
        drop(h);
        if let Some(e) = self.exported.get() {
            let mut attributes = vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", tool.to_string()),
            ];
            if !ok {
                attributes.push(KeyValue::new("error.type", "tool_error"));
            }
            e.latency.record(secs, &attributes);
        }
    }

    /// Counts a `tools/call` in flight (waiting for a slot included) until the guard drops.
    pub fn call_started(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self)
    }

    /// Counts a reload of the catalog's files: swapped in, or failed (the last good catalog
    /// still serving).
    pub fn record_reload(&self, ok: bool) {
        let n = if ok {
            &self.reloads_ok
        } else {
            &self.reloads_failed
        };
        n.fetch_add(1, Ordering::AcqRel);
    }

    /// Calls by (tool, outcome).
    pub fn calls(&self) -> Vec<((String, &'static str), u64)> {
        lock(&self.calls)
            .iter()
            .map(|(k, n)| (k.clone(), *n))
            .collect()
    }

    /// HTTP answers by status.
    pub fn http_responses(&self) -> Vec<(u16, u64)> {
        lock(&self.http).iter().map(|(s, n)| (*s, *n)).collect()
    }

    /// Tool calls in flight now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Reloads swapped in and failed.
    pub fn reloads(&self) -> (u64, u64) {
        (
            self.reloads_ok.load(Ordering::Acquire),
            self.reloads_failed.load(Ordering::Acquire),
        )
    }

    /// Hands the OTLP side to these metrics (once; later calls are ignored).
    pub fn export(&self, exported: Exported) {
        let _ = self.exported.set(exported);
    }

    /// Counts one HTTP answer by status (401, 403, 429… show up here).
    pub fn record_http(&self, status: u16) {
        *lock(&self.http).entry(status).or_default() += 1;
    }

    /// The Prometheus text exposition (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP arcane_mcp_tool_calls_total Tool calls by tool and outcome.\n\
             # TYPE arcane_mcp_tool_calls_total counter\n",
        );
        for ((tool, outcome), n) in lock(&self.calls).iter() {
            let _ = writeln!(
                out,
                "arcane_mcp_tool_calls_total{{tool=\"{}\",outcome=\"{outcome}\"}} {n}",
                label(tool)
            );
        }
        out.push_str(
            "# HELP arcane_mcp_tool_call_duration_seconds Time to answer a tool call.\n\
             # TYPE arcane_mcp_tool_call_duration_seconds histogram\n",
        );
        let h = lock(&self.latency);
        for (le, n) in BUCKETS.iter().zip(h.counts.iter()) {
            let _ = writeln!(
                out,
                "arcane_mcp_tool_call_duration_seconds_bucket{{le=\"{le}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "arcane_mcp_tool_call_duration_seconds_bucket{{le=\"+Inf\"}} {}\n\
             arcane_mcp_tool_call_duration_seconds_sum {}\n\
             arcane_mcp_tool_call_duration_seconds_count {}",
            h.count, h.sum, h.count
        );
        drop(h);
        out.push_str(
            "# HELP arcane_mcp_http_responses_total HTTP answers by status.\n\
             # TYPE arcane_mcp_http_responses_total counter\n",
        );
        for (status, n) in lock(&self.http).iter() {
            let _ = writeln!(
                out,
                "arcane_mcp_http_responses_total{{status=\"{status}\"}} {n}"
            );
        }
        let (ok, failed) = self.reloads();
        let _ = writeln!(
            out,
            "# HELP arcane_mcp_tool_calls_in_flight Tool calls in flight, waiting for a slot included.\n\
             # TYPE arcane_mcp_tool_calls_in_flight gauge\n\
             arcane_mcp_tool_calls_in_flight {}\n\
             # HELP arcane_mcp_catalog_reloads_total Catalog reloads by outcome.\n\
             # TYPE arcane_mcp_catalog_reloads_total counter\n\
             arcane_mcp_catalog_reloads_total{{outcome=\"ok\"}} {ok}\n\
             arcane_mcp_catalog_reloads_total{{outcome=\"failed\"}} {failed}",
            self.in_flight()
        );
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A label value with `\`, `"` and newlines escaped as the text format requires.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_a_cumulative_histogram() {
        let m = Metrics::default();
        m.record_call("arcane_execute_action", true, Duration::from_millis(3));
        m.record_call("arcane_execute_action", false, Duration::from_millis(300));
        m.record_call("we\"ird", true, Duration::from_secs(100));
        m.record_http(401);
        m.record_reload(true);
        m.record_reload(false);
        m.record_reload(false);
        let guard = m.call_started();
        let text = m.render();
        assert!(
            text.contains("arcane_mcp_tool_calls_in_flight 1\n"),
            "{text}"
        );
        drop(guard);
        assert!(m.render().contains("arcane_mcp_tool_calls_in_flight 0\n"));
        assert!(text.contains("arcane_mcp_catalog_reloads_total{outcome=\"ok\"} 1\n"));
        assert!(text.contains("arcane_mcp_catalog_reloads_total{outcome=\"failed\"} 2\n"));
        assert!(text.contains(
            "arcane_mcp_tool_calls_total{tool=\"arcane_execute_action\",outcome=\"ok\"} 1"
        ));
        assert!(text.contains(
            "arcane_mcp_tool_calls_total{tool=\"arcane_execute_action\",outcome=\"error\"} 1"
        ));
        assert!(text.contains("tool=\"we\\\"ird\""));
        assert!(text.contains("duration_seconds_bucket{le=\"0.005\"} 1\n"));
        assert!(text.contains("duration_seconds_bucket{le=\"0.5\"} 2\n"));
        assert!(text.contains("duration_seconds_bucket{le=\"60\"} 2\n"));
        assert!(text.contains("duration_seconds_bucket{le=\"+Inf\"} 3\n"));
        assert!(text.contains("duration_seconds_count 3"));
        assert!(text.contains("arcane_mcp_http_responses_total{status=\"401\"} 1"));
    }
}
