//! The options of `httplab study` (clap), read by the command line's
//! modules.

use std::path::PathBuf;

use clap::Parser;

/// Run a whole server comparison and write its report.
#[derive(Debug, Parser)]
#[command(
    about = "Run a whole server comparison (httplab's models, nginx, Apache, lighttpd, h2o, Caddy) and write its report",
    long_about = "Runs a study: generates the corpus, starts every server at once, each on its own free loopback \
                  port (writing peers' configurations itself), runs every workload in rounds that visit the \
                  servers in a random order, then restarts every server and gives a budget of extra rounds to the \
                  comparisons nearest a decision (their window chosen from where the noise lives), and writes index.html, results.json and CSVs. Every comparison ends as a winner, \
                  equivalent or inconclusive (with the difference the run could have seen); see docs/statistics.md. \
                  Peers that are not installed appear in the report as \"not installed\". \
                  Ctrl-C stops the run in progress, keeps the finished ones and still writes the report. \
                  The study file format is documented in docs/study-format.md.",
    after_help = "Examples:\n  \
                  httplab study                      run the default study (about 4.5 minutes on 2 cores)\n  \
                  httplab study --list               list the built-in studies\n  \
                  httplab study capacity --dry-run   show what the capacity study would run\n  \
                  httplab study my.toml --out my-report\n\n\
                  My server against nginx:\n  \
                  httplab study --mine './my-server --port {port} --root {root}' --quick\n  \
                  httplab study --mine './my-server -p {port} -d {root}' --against nginx,h2o\n  \
                  httplab study --init mine.toml     write that study as a file to edit, then: httplab study mine.toml"
)]
pub struct Cli {
    /// A built-in study name (see --list) or a study TOML file [default: default]
    pub study: Option<String>,
    /// Output directory for index.html, summary.md, results.json and the CSV tables
    #[arg(long, short, default_value = "httplab-report")]
    pub out: PathBuf,
    /// List the built-in studies and exit
    #[arg(long)]
    pub list: bool,
    /// Print the plan that would run (corpus, servers and their availability, workloads, budget, run count, time of the first rounds and at most) and exit
    #[arg(long)]
    pub dry_run: bool,
    /// Print a built-in study's TOML (a starting point for your own) and exit
    #[arg(long)]
    pub show: bool,
    /// Fewest repetitions of every cell (overrides the study; at least 2, a CI needs two values)
    #[arg(long, value_name = "N", alias = "min-reps")]
    pub repetitions: Option<u32>,
    /// Most repetitions of every cell: the cap on the extra rounds the sequential design may
    /// give a step [default: the study's, 10]
    #[arg(long, value_name = "N")]
    pub max_reps: Option<u32>,
    /// Seconds of extra rounds after the first ones, handed to the comparisons nearest a
    /// decision, on a second start of every server (0: no second phase, one start) [default: the study's budget_s, else as long as the first
    /// phase took]
    #[arg(long, value_name = "SECONDS")]
    pub budget: Option<f64>,
    /// Smallest effect of interest δ as a fraction: "equivalent" means the decision's interval
    /// of the ratio is inside ±δ (docs/statistics.md) [default: the study's, 0.05]
    #[arg(long, value_name = "FRACTION")]
    pub delta: Option<f64>,
    /// Seconds of load before each measurement window, discarded [default: the study's, 1]
    #[arg(long, value_name = "SECONDS")]
    pub warmup: Option<f64>,
    /// Seconds each run measures [default: the study's, 3]
    #[arg(long, value_name = "SECONDS")]
    pub window: Option<f64>,
    /// Seed of the random server order of every round; recorded in results.json [default: drawn at start]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Trade certainty for time: 2–3 repetitions, 0.3 s warm-up, 1 s window (wider intervals, fewer
    /// comparisons decided)
    #[arg(long)]
    pub quick: bool,
    /// Run only these servers (by report name; repeatable)
    #[arg(long = "server", value_name = "NAME")]
    pub servers: Vec<String>,
    /// The httplab binary for `kind = "httplab"` servers [default: $HTTPLAB_BIN, else this program if it is named httplab, else an httplab beside it]
    #[arg(long, value_name = "PATH")]
    pub httplab_bin: Option<PathBuf>,
    /// No progress bar
    #[arg(long)]
    pub no_progress: bool,
    /// Serve and load over TLS (as `tls = true` in the study file): the study makes a
    /// self-signed certificate for 127.0.0.1, every server serves HTTPS with it, and every
    /// workload runs over TLS, verifying that certificate
    #[arg(long)]
    pub tls: bool,
    /// Your own server's command line, run against --against (nginx by default) over
    /// six workloads: small files over keep-alive, on a new connection per request, a
    /// 2.9 MB file, each as capacity and as server CPU per request at a fixed rate. `{port}`
    /// (where to listen, on 127.0.0.1) and `{root}` (the files to serve) are required and
    /// filled in; `{dir}` is a scratch directory, `{workers}` 1. Split into words as a shell
    /// would. The answer ("mine vs nginx: …") is the first lines of the output and report
    #[arg(long, value_name = "CMD", help_heading = "My server against nginx")]
    pub mine: Option<String>,
    /// The peers to compare your server with, comma-separated or repeated: nginx, apache,
    /// lighttpd, h2o, caddy; the first is the baseline [default: nginx]
    #[arg(long, value_name = "PEERS", help_heading = "My server against nginx")]
    pub against: Vec<String>,
    /// Your server's name in the report [default: mine]
    #[arg(long, value_name = "NAME", help_heading = "My server against nginx")]
    pub name: Option<String>,
    /// Write the study of --mine as a commented TOML file to edit (your command from
    /// --mine, else a placeholder; --against, --name) and exit; never overwrites a file
    #[arg(long, value_name = "FILE", help_heading = "My server against nginx")]
    pub init: Option<PathBuf>,
    /// Seconds every server may take to answer its first request before it counts as not
    /// starting [default: the server's ready_timeout_s, 15]
    #[arg(long, value_name = "SECONDS")]
    pub ready_timeout: Option<f64>,
    /// This machine is client I of N: every load run of the study runs shard I of its
    /// schedule (as `httplab load --client I/N`). Fixes the study in advance (every cell
    /// exactly its fewest repetitions, one seed for all shards) and keeps each run's JSON
    /// in OUT/runs/ for `httplab merge`; capacity searches, one-stream workloads and
    /// fewer users than N are refused. See docs/distributed.md
    #[arg(long, value_name = "I/N", help_heading = "Client shards")]
    pub client: Option<String>,
    /// Id of the sharded study, the same on every shard (each run's id is derived from it)
    /// [default: derived from the study and N]
    #[arg(long, value_name = "ID", help_heading = "Client shards")]
    pub run_id: Option<String>,
    /// Serve live metrics (Prometheus text format) on http://ADDR/metrics during the study:
    /// the running load run's metrics (updated once per interval) and
    /// `httplab_run_info{workload,server,step,round}`; port 0 picks a free port (printed on
    /// stderr)
    #[arg(long, value_name = "ADDR", value_parser = httplab_live::parse_addr)]
    pub prometheus: Option<std::net::SocketAddr>,
}
