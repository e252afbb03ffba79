//! The study behind `httplab compare --base-cmd CMD --new-cmd CMD` (the paired
//! regression gate): two `command` servers, BASE (the baseline) and NEW, one
//! fixed-rate workload judged on server CPU per request, its visits in short
//! A B | B A slices. Written from one template (`gate.toml` beside this file)
//! filled from the compare crate's typed [`Request`].

use anyhow::Result;
use httplab_compare::paired::{Request, Work};

use crate::spec::{self, StudyFile};

/// The template, with `@…@` markers filled in by [`template`].
const TEMPLATE: &str = include_str!("gate.toml");

/// Seconds of extra rounds when the request does not say (its `budget_s`
/// is passed to the run as `--budget` is): with the first four rounds about
/// two and a half minutes in all.
pub const DEFAULT_BUDGET_S: f64 = 120.0;

/// (target, requests per connection, default new connections per second,
/// description) of a kind of work.
fn shape(w: Work) -> (&'static str, u64, f64, &'static str) {
    match w {
        Work::Small => (
            "/small.txt",
            10,
            1000.0,
            "An 87 B file, 10 keep-alive requests per connection",
        ),
        Work::SmallNewConnection => (
            "/small.txt",
            1,
            1000.0,
            "An 87 B file, a new connection per request",
        ),
        Work::Large => (
            "/large.jpg",
            1,
            20.0,
            "A 2.9 MB file, a new connection per request",
        ),
    }
}

fn argv(words: &[String]) -> String {
    toml::Value::Array(
        words
            .iter()
            .map(|w| toml::Value::String(w.clone()))
            .collect(),
    )
    .to_string()
}

/// The study file's text for a request.
pub fn template(r: &Request) -> String {
    let (target, calls, default_rate, what) = shape(r.work);
    let rate = r.rate.unwrap_or(default_rate);
    let description = format!(
        "{what}, {rate} new connections per second ({} requests/s), the same for both servers.",
        rate * calls as f64
    );
    TEMPLATE
        .replace("@BUDGET@", &format!("{DEFAULT_BUDGET_S:?}"))
        .replace("@DELTA@", &format!("{:?}", r.delta))
        .replace("@BASE@", &argv(&r.base))
        .replace("@NEW@", &argv(&r.new))
        .replace("@WORK@", r.work.word())
        .replace("@DESCRIPTION@", &description)
        .replace("@TARGET@", target)
        .replace("@RATE@", &format!("{rate:?}"))
        .replace("@CALLS@", &calls.to_string())
}

/// The study itself (the template's text, parsed and checked like any study
/// file).
pub fn study(r: &Request) -> Result<StudyFile> {
    spec::parse(&template(r), "the paired gate's study")
}

#[cfg(test)]
mod tests {
    use super::*;
    use httplab_compare::paired::{BASE, NEW};

    fn request(work: Work) -> Request {
        Request {
            base: vec![
                "srv".into(),
                "--port".into(),
                "{port}".into(),
                "{root}".into(),
            ],
            new: vec!["/opt/new srv".into(), "-p={port}".into(), "{root}".into()],
            work,
            rate: None,
            budget_s: Some(30.0),
            delta: 0.05,
            out: None,
            progress: false,
        }
    }

    #[test]
    fn every_work_gives_a_two_server_study_with_base_as_baseline() {
        for (w, _) in Work::ALL {
            let s = study(&request(w)).unwrap();
            let names: Vec<String> = spec::expand_servers(&s)
                .into_iter()
                .map(|x| x.name)
                .collect();
            assert_eq!(names, [BASE, NEW]);
            assert_eq!(s.compare.baseline.as_deref(), Some(BASE));
            assert_eq!(s.workloads.len(), 1);
            let wl = &s.workloads[0];
            assert_eq!(wl.metric, Some(spec::Metric::ServerCpuUsPerReq));
            assert!(wl.rate.is_some() && wl.slices == Some(4));
            assert_eq!(s.protocol.budget_s, Some(DEFAULT_BUDGET_S));
            assert_eq!(s.servers[1].command[0], "/opt/new srv");
        }
    }

    #[test]
    fn the_rate_is_the_requests() {
        let mut r = request(Work::Large);
        r.rate = Some(7.5);
        let s = study(&r).unwrap();
        assert_eq!(s.workloads[0].rate, Some(7.5));
        assert_eq!(s.workloads[0].target, "/large.jpg");
    }
}
