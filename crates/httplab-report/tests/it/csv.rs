//! autobench's CSV/TSV, exactly: the header names, the one-decimal httperf
//! figures, `dem_req_rate` = rate × num_call, errors as a Perl number (percent
//! of replies) and 101 for a test without replies.

use httplab_model::{RunResult, Summary, SweepResult, SweepStep, SweepTarget};
use httplab_report::csv::{self, Format};

/// A run carrying the figures of one httperf report.
#[allow(clippy::too_many_arguments)]
fn run(
    req_rate: f64,
    conn_rate: f64,
    rep: (f64, f64, f64, f64),
    response_ms: f64,
    net_kb: f64,
    replies: u64,
    errors: u64,
    num_calls: u64,
) -> RunResult {
    let mut r = RunResult::default();
    r.request.rate_per_s = req_rate;
    r.connection.rate_per_s = conn_rate;
    r.reply.rate = Summary {
        count: 12,
        min: rep.0,
        avg: rep.1,
        max: rep.2,
        median: rep.1,
        stddev: rep.3,
    };
    r.reply.response_ms = response_ms;
    r.resources.net_kb_per_s = net_kb;
    r.totals.replies = replies;
    r.errors.total = errors;
    r.config.num_calls = Some(num_calls);
    r
}

fn target(host: &str, steps: Vec<(f64, RunResult)>) -> SweepTarget {
    SweepTarget {
        label: format!("{host}:80/"),
        url: format!("http://{host}:80/"),
        steps: steps
            .into_iter()
            .map(|(demanded_rate, run)| SweepStep { demanded_rate, run })
            .collect(),
        saturation: Default::default(),
    }
}

#[test]
fn single_host_matches_autobench() {
    // Seed 002's httperf runs at --rate 100 and 200 (num-calls 1), and one
    // without replies.
    let sweep = SweepResult {
        targets: vec![target(
            "ckc-110-92.reshall.berkeley.edu",
            vec![
                (
                    100.0,
                    run(
                        86.1,
                        99.9,
                        (52.6, 84.8, 99.8, 16.1),
                        36.6,
                        28.3,
                        5166,
                        834,
                        1,
                    ),
                ),
                (
                    200.0,
                    run(
                        96.0,
                        184.7,
                        (0.0, 103.8, 138.2, 52.2),
                        52.2,
                        31.5,
                        6231,
                        5769,
                        1,
                    ),
                ),
                (
                    300.0,
                    run(0.0, 0.0, (0.0, 0.0, 0.0, 0.0), 0.0, 0.0, 0, 400, 1),
                ),
            ],
        )],
        ..Default::default()
    };
    let h = "ckc-110-92.reshall.berkeley.edu";
    let expected = format!(
        "dem_req_rate,req_rate_{h},con_rate_{h},min_rep_rate_{h},avg_rep_rate_{h},max_rep_rate_{h},stddev_rep_rate_{h},resp_time_{h},net_io_{h},errors_{h}\n\
         100,86.1,99.9,52.6,84.8,99.8,16.1,36.6,28.3,16.144018583043\n\
         200,96.0,184.7,0.0,103.8,138.2,52.2,52.2,31.5,92.5854597977853\n\
         300,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,101\n"
    );
    assert_eq!(csv::write_sweep(&sweep, 1, Format::Csv), expected);
}

#[test]
fn two_hosts_tsv_with_num_calls() {
    // Seed 003's example.com run: 10..20 req/s, no errors; two hosts side by side.
    let a = target(
        "testhost1",
        vec![
            (
                5.0,
                run(9.9, 9.9, (9.2, 9.9, 10.0, 0.3), 88.1, 534.1, 500, 0, 2),
            ),
            (
                10.0,
                run(
                    19.8,
                    19.8,
                    (19.0, 19.8, 20.0, 0.4),
                    90.25,
                    1068.04,
                    1000,
                    0,
                    2,
                ),
            ),
        ],
    );
    let b = target(
        "testhost2",
        vec![
            (
                5.0,
                run(10.0, 10.0, (10.0, 10.0, 10.0, 0.0), 12.0, 100.0, 500, 5, 2),
            ),
            (
                10.0,
                run(20.0, 20.0, (20.0, 20.0, 20.0, 0.0), 13.0, 200.0, 1000, 0, 2),
            ),
        ],
    );
    let sweep = SweepResult {
        targets: vec![a, b],
        ..Default::default()
    };
    let mut header: Vec<String> = vec!["dem_req_rate".into()];
    for h in ["testhost1", "testhost2"] {
        for f in [
            "req_rate",
            "con_rate",
            "min_rep_rate",
            "avg_rep_rate",
            "max_rep_rate",
            "stddev_rep_rate",
            "resp_time",
            "net_io",
            "errors",
        ] {
            header.push(format!("{f}_{h}"));
        }
    }
    let expected = format!(
        "{}\n\
         10\t9.9\t9.9\t9.2\t9.9\t10.0\t0.3\t88.1\t534.1\t0\t10.0\t10.0\t10.0\t10.0\t10.0\t0.0\t12.0\t100.0\t1\n\
         20\t19.8\t19.8\t19.0\t19.8\t20.0\t0.4\t90.2\t1068.0\t0\t20.0\t20.0\t20.0\t20.0\t20.0\t0.0\t13.0\t200.0\t0\n",
        header.join("\t")
    );
    assert_eq!(csv::write_sweep(&sweep, 2, Format::Tsv), expected);
}

#[test]
fn header_function_and_formats() {
    assert_eq!(
        csv::header(&["www.example.com"], Format::Csv),
        "dem_req_rate,req_rate_www.example.com,con_rate_www.example.com,min_rep_rate_www.example.com,avg_rep_rate_www.example.com,max_rep_rate_www.example.com,stddev_rep_rate_www.example.com,resp_time_www.example.com,net_io_www.example.com,errors_www.example.com"
    );
    assert_eq!(Format::parse("tsv"), Some(Format::Tsv));
    assert_eq!(Format::parse("xml"), None);
}
