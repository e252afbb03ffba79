//! The study file: a TOML document declaring corpus, servers, pinning,
//! workloads and comparisons. See `docs/study-format.md`.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Deserializer};

pub use httplab_model::{HttpProtocol as Protocol, IdleSend, VaryParam};

/// A byte count written as an integer (`12855`) or with a unit (`"87B"`,
/// `"12.9KB"`, `"2.9MB"`, `"32MiB"`, `"64k"`). KB/MB/GB are powers of 1000;
/// KiB/MiB/GiB and the bare letters k/m/g are powers of 1024, as in
/// `httplab serve`'s sizes (`--cache 64k` is 65536 bytes there and here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl Size {
    /// Parses `"12.9KB"`-style text.
    pub fn parse(text: &str) -> Result<Size> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let n: f64 = num.parse().with_context(|| {
            format!("bad size '{text}': expected a number such as 87, \"12.9KB\" or \"32MiB\"")
        })?;
        let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "kb" => 1e3,
            "k" | "kib" => 1024.0,
            "mb" => 1e6,
            "m" | "mib" => 1024.0 * 1024.0,
            "gb" => 1e9,
            "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
            other => {
                bail!(
                    "bad size unit '{other}' in '{text}' (use B, KB, MB, GB = 1000^n or k, KiB, m, MiB, g, GiB = 1024^n)"
                )
            }
        };
        let v = (n * mult).round();
        if !(0.0..=64e9).contains(&v) {
            bail!("size '{text}' out of range (0 B to 64 GB)");
        }
        Ok(Size(v as u64))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&human_bytes(self.0))
    }
}

pub use httplab_model::study_facts::human_bytes;

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Size, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Size(n)),
            Raw::S(s) => Size::parse(&s).map_err(|e| serde::de::Error::custom(format!("{e:#}"))),
        }
    }
}

/// One integer or a list of them (`workers = 4` or `workers = [1, 5, 10]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// A single value.
    One(u32),
    /// Several values: the server entry expands into one server per value.
    Many(Vec<u32>),
}

impl OneOrMany {
    /// The values, in order.
    pub fn values(&self) -> Vec<u32> {
        match self {
            OneOrMany::One(v) => vec![*v],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// A whole study file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    /// Short name (`file-sizes`), used in the report title and file names.
    pub name: String,
    /// One-line title.
    #[serde(default)]
    pub title: String,
    /// What the study asks; printed at the top of the report.
    #[serde(default)]
    pub description: String,
    /// Which seed report this reproduces, if any: text, printed in the
    /// report ("Reproduces: …"). Not the random seed of the round orders,
    /// which is the number `[protocol] seed`.
    #[serde(default, deserialize_with = "report_seed")]
    pub seed: String,
    /// Fewest repetitions of every workload: another spelling of
    /// `[protocol] min_repetitions`, which [`parse`] sets from it (giving
    /// both with different values is refused).
    #[serde(default)]
    pub repetitions: Option<u32>,
    /// How every cell is measured: warm-up, window, repetitions, budget, δ.
    #[serde(default)]
    pub protocol: ProtocolSpec,
    /// Files to generate.
    #[serde(default)]
    pub corpus: Corpus,
    /// Core assignment.
    #[serde(default)]
    pub pinning: Pinning,
    /// Servers under test, in report order.
    pub servers: Vec<ServerSpec>,
    /// Workloads, in run order.
    pub workloads: Vec<Workload>,
    /// What the summary compares.
    #[serde(default)]
    pub compare: Compare,
    /// The seed's questions, answered from the verdicts at the end of the report.
    #[serde(default)]
    pub questions: Vec<Question>,
    /// Serve and load over TLS (HTTPS): the study makes a self-signed
    /// certificate, every server serves HTTPS with it and every workload runs
    /// over TLS (`httplab study --tls` sets it too).
    #[serde(default)]
    pub tls: bool,
}

/// `[protocol]`: how every workload step is measured on every server.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProtocolSpec {
    /// Seconds of load before each measurement window, discarded (1).
    #[serde(default = "d_warmup")]
    pub warmup_s: f64,
    /// Seconds each run measures (3).
    #[serde(default = "d_window")]
    pub window_s: f64,
    /// Fewest repetitions per cell (3).
    #[serde(default = "d_min_reps")]
    pub min_repetitions: u32,
    /// Most repetitions per cell (10).
    #[serde(default = "d_max_reps")]
    pub max_repetitions: u32,
    /// The chance that any claim of the study is false (0.05;
    /// docs/statistics.md).
    #[serde(default = "d_alpha")]
    pub alpha: f64,
    /// δ, the smallest relative effect of interest (0.05), written `delta`
    /// (or `min_effect`, the older name): two servers are "equivalent" when
    /// the decision's interval of their ratio lies inside [1/(1+δ), 1+δ]
    /// (docs/statistics.md). A fraction in (0, 1).
    #[serde(rename = "delta", alias = "min_effect", default = "d_delta")]
    pub min_effect: f64,
    /// Study-wide time budget, seconds, for the rounds beyond
    /// `min_repetitions`: they go to the comparisons nearest a decision
    /// until it is spent; `max_repetitions` still caps every step (None:
    /// the runner's default). Above 0 when given.
    #[serde(default)]
    pub budget_s: Option<f64>,
    /// Seed of the round orders (default: chosen at start and recorded).
    #[serde(default, deserialize_with = "round_seed")]
    pub seed: Option<u64>,
}

fn d_warmup() -> f64 {
    1.0
}
fn d_window() -> f64 {
    3.0
}
fn d_min_reps() -> u32 {
    3
}
fn d_max_reps() -> u32 {
    10
}
fn d_alpha() -> f64 {
    0.05
}
fn d_delta() -> f64 {
    0.05
}

impl Default for ProtocolSpec {
    fn default() -> Self {
        ProtocolSpec {
            warmup_s: d_warmup(),
            window_s: d_window(),
            min_repetitions: d_min_reps(),
            max_repetitions: d_max_reps(),
            alpha: d_alpha(),
            min_effect: d_delta(),
            budget_s: None,
            seed: None,
        }
    }
}

/// The top-level `seed`: text naming the report a study reproduces. A number
/// there is almost always meant as the round orders' seed, so it is refused
/// with a pointer to `[protocol] seed`.
fn report_seed<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    struct V;
    impl V {
        fn number<E: serde::de::Error>(n: impl fmt::Display) -> E {
            E::custom(format!(
                "top-level `seed` is text naming the report this study reproduces \
                 (seed = \"004: …\"); the random seed of the round orders is a number \
                 under [protocol]: `[protocol]` then `seed = {n}` (or `httplab study --seed {n}`)"
            ))
        }
    }
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("text naming the report this study reproduces")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<String, E> {
            Err(V::number(v))
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<String, E> {
            Err(V::number(v))
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<String, E> {
            Err(V::number(v))
        }
    }
    d.deserialize_any(V)
}

/// `[protocol] seed`: a whole number (the round orders' random seed); text
/// there is refused with a pointer to the top-level `seed`.
fn round_seed<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<u64>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a whole number from 0 up (the round orders' random seed)")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<Self::Value, E> {
            u64::try_from(v).map(Some).map_err(|_| {
                E::custom(format!(
                    "[protocol] seed = {v}: the round orders' seed is a whole number from 0 up"
                ))
            })
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
            Err(E::custom(format!(
                "[protocol] seed is the round orders' random seed, a number (seed = 42), \
                 not text (\"{v}\"); the report a study reproduces is the top-level \
                 `seed = \"…\"`, written before the first [table]"
            )))
        }
    }
    d.deserialize_any(V)
}

/// `[[questions]]`: a seed's question, answered from the comparisons listed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The question, as the seed asked it.
    pub ask: String,
    /// What the seed itself concluded.
    #[serde(default)]
    pub seed_answer: String,
    /// Why this study's answer may differ from the seed's (method, hardware).
    #[serde(default)]
    pub why_differ: String,
    /// The comparisons that answer it.
    pub evidence: Vec<Evidence>,
}

/// One comparison of two servers on one workload (every step of it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// Workload name.
    pub workload: String,
    /// The server the seed found better (or expected to be).
    pub server: String,
    /// The server it is compared with.
    pub versus: String,
    /// Metric (default: the workload's).
    #[serde(default)]
    pub metric: Option<Metric>,
    /// What the seed said about this pair: "better", "worse" or "same".
    #[serde(default)]
    pub seed_says: Option<String>,
}

/// The document root to generate.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Corpus {
    /// Single files: `{ path = "small.txt", size = 87 }`.
    #[serde(default)]
    pub files: Vec<FileSpec>,
    /// File sets: `{ name = "set50", count = 50, size = "68KB" }` →
    /// `/set50/0000.bin` … `/set50/0049.bin`.
    #[serde(default)]
    pub sets: Vec<SetSpec>,
    /// HTML pages with embedded objects: `{ name = "memes", objects = 20 }` →
    /// `/memes.html` plus `/memes/obj000.gif` ….
    #[serde(default)]
    pub pages: Vec<PageSpec>,
}

/// One file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Path under the root, e.g. `small.txt` or `img/big.jpg`.
    pub path: String,
    /// Size.
    pub size: Size,
}

/// A set of equally sized files.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetSpec {
    /// Directory name under the root.
    pub name: String,
    /// Number of files.
    pub count: u32,
    /// Size of each file.
    pub size: Size,
}

/// An HTML page with embedded objects.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageSpec {
    /// Page name: `/NAME.html`, objects under `/NAME/`.
    pub name: String,
    /// Number of embedded objects.
    pub objects: u32,
    /// Size of each object (default 4 KB).
    #[serde(default = "default_object_size")]
    pub object_size: Size,
    /// Size of the HTML page itself, padded with text (default 4148 B, seed 000's page).
    #[serde(default = "default_page_size")]
    pub page_size: Size,
}

fn default_object_size() -> Size {
    Size(4096)
}
fn default_page_size() -> Size {
    Size(4148)
}

/// Which cores the servers and the load generator get. Cores this machine
/// does not have are dropped (and noted in the report); an empty list means
/// "not pinned".
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinning {
    /// Cores for every server process.
    #[serde(default)]
    pub server_cores: Vec<u32>,
    /// Cores for the load generator's threads.
    #[serde(default)]
    pub client_cores: Vec<u32>,
}

/// Kinds of server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    /// `httplab serve`, started as a separate process.
    Httplab,
    /// nginx.
    Nginx,
    /// Apache httpd 2.4 (`mpm` = event, worker or prefork).
    Apache,
    /// lighttpd 1.4.
    Lighttpd,
    /// h2o.
    H2o,
    /// Caddy 2 (a generated Caddyfile: a static file server).
    Caddy,
    /// ngtcp2's example HTTP/3 server (`gtlsserver`, Debian's
    /// `ngtcp2-server`): HTTP/3 only, so over TLS and in h3 workloads only.
    Ngtcp2,
    /// Any command; `{port}`, `{root}`, `{dir}` and `{workers}` are substituted.
    Command,
}

impl ServerKind {
    /// Name as written in study files.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Httplab => "httplab",
            ServerKind::Nginx => "nginx",
            ServerKind::Apache => "apache",
            ServerKind::Lighttpd => "lighttpd",
            ServerKind::H2o => "h2o",
            ServerKind::Caddy => "caddy",
            ServerKind::Ngtcp2 => "ngtcp2",
            ServerKind::Command => "command",
        }
    }
}

/// `httplab serve`'s concurrency model (`model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// A reactor per worker thread (`--workers`).
    #[default]
    Event,
    /// Boss-worker: an acceptor and a pool of blocking threads (`--threads`).
    Threads,
    /// A process per connection (`--max-children`).
    Fork,
    /// One thread, one connection at a time.
    Single,
}

impl Model {
    /// The word of the study file and of `httplab serve --model`.
    pub fn word(self) -> &'static str {
        match self {
            Model::Event => "event",
            Model::Threads => "threads",
            Model::Fork => "fork",
            Model::Single => "single",
        }
    }

    /// The `httplab serve` option that `workers` sets for this model.
    pub fn workers_flag(self) -> &'static str {
        match self {
            Model::Threads => "--threads",
            Model::Fork => "--max-children",
            Model::Event | Model::Single => "--workers",
        }
    }
}

/// `httplab serve`'s connection handling (`mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// A connection per request.
    Close,
    /// Persistent connections, one request at a time.
    KeepAlive,
    /// Persistent connections with pipelining.
    Pipeline,
}

impl Mode {
    /// The word of the study file.
    pub fn word(self) -> &'static str {
        match self {
            Mode::Close => "close",
            Mode::KeepAlive => "keep-alive",
            Mode::Pipeline => "pipeline",
        }
    }
}

/// Apache's multi-processing module (`mpm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mpm {
    /// Threads with an event loop for idle keep-alive connections.
    #[default]
    Event,
    /// Threads, each holding its connection.
    Worker,
    /// A process per connection, no threads.
    Prefork,
}

impl Mpm {
    /// The word of the study file and of Apache's module name.
    pub fn word(self) -> &'static str {
        match self {
            Mpm::Event => "event",
            Mpm::Worker => "worker",
            Mpm::Prefork => "prefork",
        }
    }

    /// Whether it runs threads (mod_http2 needs them; `threads_per_child`
    /// sets them).
    pub fn threaded(self) -> bool {
        self != Mpm::Prefork
    }
}

/// A server entry in the study file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// Label in the report (default derived from kind/model/mpm/workers).
    #[serde(default)]
    pub name: Option<String>,
    /// What to run.
    pub kind: ServerKind,
    /// httplab: concurrency model (event, threads, fork, single).
    #[serde(default)]
    pub model: Option<Model>,
    /// httplab: connection mode (close, keep-alive, pipeline).
    #[serde(default)]
    pub mode: Option<Mode>,
    /// apache: MPM (event, worker, prefork).
    #[serde(default)]
    pub mpm: Option<Mpm>,
    /// Worker processes/threads; a list expands into one server per value.
    #[serde(default)]
    pub workers: Option<OneOrMany>,
    /// apache event/worker: threads per child (default 25).
    #[serde(default)]
    pub threads_per_child: Option<u32>,
    /// Keep-alive on (default true).
    #[serde(default)]
    pub keep_alive: Option<bool>,
    /// sendfile on (default true).
    #[serde(default)]
    pub sendfile: Option<bool>,
    /// Peers: extra configuration lines appended to the generated file
    /// (nginx: inside `http {}`; Apache, lighttpd, h2o: at top level;
    /// Caddy: inside the site block).
    #[serde(default)]
    pub extra_config: String,
    /// command: argv (first element is the program).
    #[serde(default)]
    pub command: Vec<String>,
    /// httplab: extra arguments for `httplab serve`.
    #[serde(default)]
    pub args: Vec<String>,
    /// command: environment variables for the server.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// command: a command whose output is the version string (e.g. `["myserver", "--version"]`).
    #[serde(default)]
    pub version_command: Vec<String>,
    /// Path fetched to decide the server is ready (default: the smallest corpus file).
    #[serde(default)]
    pub ready_path: Option<String>,
    /// How long to wait for readiness, seconds (default 15).
    #[serde(default)]
    pub ready_timeout_s: Option<f64>,
}

/// Kinds of workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// httperf-style: `num_conns` connections, `num_calls` requests each, at `rate` per second (or back to back).
    Load,
    /// Closed loop: `users` each send `requests` requests, waiting for each reply (seed 004's client).
    Users,
    /// Rate sweep (autobench): `load` at `low_rate`, `low_rate + rate_step`, … `high_rate`.
    Sweep,
    /// A normal client (`users`, or open loop at `rate`) measured while
    /// `idle_conns` idle connections are held open against the server
    /// (slowloris-style; the holder is `execute::idle`).
    Idle,
}

impl WorkloadKind {
    /// Name as written in study files.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Load => "load",
            WorkloadKind::Users => "users",
            WorkloadKind::Sweep => "sweep",
            WorkloadKind::Idle => "idle",
        }
    }
}

/// The metrics a study records and judges: the model's one registry
/// ([`httplab_model::metric`]), whose keys are the words of study files, cells and CSV
/// headers. A workload is judged by a metric of one value per run; the error rate, compared
/// as counts, is recorded in every cell but judges no workload ([`judged_metric`]).
pub use httplab_model::Metric;

/// Checks that `metric` can judge a workload (a ratio of geometric means of per-round values).
fn judged_metric(metric: Metric, at: &str, what: &str) -> Result<()> {
    if metric.comparison() != httplab_model::metric::Comparison::GeometricMeanRatio {
        bail!(
            "{at}{what}: `{}` is compared as counts of calls (`httplab compare` judges it); a study judges a metric of one value per run",
            metric.key()
        );
    }
    Ok(())
}

/// A value of a varied parameter: a number or a target string.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum VaryValue {
    /// Numeric parameter value.
    Num(f64),
    /// Target string.
    Text(String),
}

impl fmt::Display for VaryValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VaryValue::Num(n) if n.fract() == 0.0 => write!(f, "{}", *n as i64),
            VaryValue::Num(n) => write!(f, "{n}"),
            VaryValue::Text(s) => f.write_str(s),
        }
    }
}

/// One varied parameter and its values: one step per value.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vary {
    /// Which parameter.
    pub param: VaryParam,
    /// Values, in step order.
    pub values: Vec<VaryValue>,
}

/// A workload entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Name (section heading in the report).
    pub name: String,
    /// load, users, sweep or idle.
    pub kind: WorkloadKind,
    /// What it shows; printed under the heading.
    #[serde(default)]
    pub description: String,
    /// Servers to run it on, by name (default: all).
    #[serde(default)]
    pub servers: Vec<String>,
    /// `/path`, `set:NAME` (every file of a set, in turn) or `page:NAME`
    /// (the page, then each of its objects, like a browser).
    pub target: String,
    /// load/sweep: connections per second (absent: back to back).
    #[serde(default)]
    pub rate: Option<f64>,
    /// load/sweep: connections to open.
    #[serde(default)]
    pub num_conns: Option<u64>,
    /// Requests per connection (default 1).
    #[serde(default)]
    pub num_calls: Option<u64>,
    /// Requests in flight per connection (default 1 = no pipelining).
    #[serde(default)]
    pub pipeline: Option<u32>,
    /// HTTP/2 and HTTP/3: streams each connection keeps in flight at once
    /// (default 1, as HTTP/1.1 without pipelining).
    #[serde(default)]
    pub streams: Option<u32>,
    /// users: simultaneous users.
    #[serde(default)]
    pub users: Option<u64>,
    /// users: requests per user.
    #[serde(default)]
    pub requests: Option<u64>,
    /// users: think time between requests, ms.
    #[serde(default)]
    pub think_ms: Option<f64>,
    /// sweep: the capacity search's first rate (it doubles from there until
    /// the server saturates, then bisects).
    #[serde(default)]
    pub low_rate: Option<f64>,
    /// load, users: measure each server's round in this many short runs of
    /// `window_s / slices`, the round's order reversed every other slice
    /// (A B | B A), so that drift within a round falls on every server alike.
    #[serde(default)]
    pub slices: Option<u32>,
    /// sweep: hold every server to this share of CPU (cores, e.g. 0.25)
    /// during the capacity search, so one client can saturate them; the
    /// workload is then judged by replies per server CPU-second.
    #[serde(default)]
    pub cpu_quota: Option<f64>,
    /// Reply timeout, seconds (default 5).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Hard limit on one run, seconds (default 60).
    #[serde(default)]
    pub max_duration_s: Option<f64>,
    /// A parameter to vary across steps.
    #[serde(default)]
    pub vary: Option<Vary>,
    /// Fewest repetitions (default: the study's protocol).
    #[serde(default)]
    pub repetitions: Option<u32>,
    /// Most repetitions (default: the study's protocol).
    #[serde(default)]
    pub max_repetitions: Option<u32>,
    /// Warm-up seconds (default: the study's protocol).
    #[serde(default)]
    pub warmup_s: Option<f64>,
    /// Measurement window seconds (default: the study's protocol).
    #[serde(default)]
    pub window_s: Option<f64>,
    /// `window` (default): run for warm-up + window, whatever the counts say;
    /// `count`: keep the workload's own counts (the seed's), with the warm-up
    /// added in front.
    #[serde(default)]
    pub measure: Measure,
    /// Metric the summary ranks this workload by (default: the study's).
    #[serde(default)]
    pub metric: Option<Metric>,
    /// The HTTP version the client speaks: `h1` (default), `h2` (over TLS by
    /// ALPN, h2c by prior knowledge in a cleartext study) or `h3` (QUIC, so
    /// TLS studies only; Caddy is the peer that speaks it). Servers that cannot speak it are left out
    /// of the workload, with the reason.
    #[serde(default)]
    pub protocol: Protocol,
    /// Over TLS: resume TLS sessions on new connections (default true, as
    /// browsers do); `false` makes every connection a full handshake
    /// (`httplab load --ssl-no-reuse`). Ignored in a cleartext study.
    #[serde(default)]
    pub tls_resume: Option<bool>,
    /// idle: connections held open while the client measures (default 100;
    /// `vary = { param = "idle_conns", … }` for steps).
    #[serde(default)]
    pub idle_conns: Option<u64>,
    /// idle: what each held connection sends: `silent` (default: connected,
    /// nothing sent) or `partial` (an unfinished request line, as slowloris).
    #[serde(default)]
    pub idle_send: Option<IdleSend>,
    /// idle: longest wait for the held connections to connect, seconds
    /// (default: `timeout_s`); connections still pending then are counted as such.
    #[serde(default)]
    pub idle_connect_s: Option<f64>,
    /// Packet loss, percent, injected on the loopback interface during each
    /// of this workload's runs (nftables on the server's port, else `tc
    /// netem`; removed when the run ends). Needs root and `nft` or `tc`;
    /// without them the workload is skipped with the reason. `load` and
    /// `users` workloads.
    #[serde(default)]
    pub loss_pct: Option<f64>,
    /// Requests per second of an unqueued latency probe beside each load
    /// run (`httplab load --probe RATE`: one connection on its own thread;
    /// its p50/p99 beside the load's in each run's result, with a warning
    /// when the client queued its own requests). `load`, `users` and `sweep`.
    #[serde(default)]
    pub probe: Option<f64>,
    /// Before each step's first-round run on each server, check the client
    /// as `httplab load --check-client` does (one client vs two at the same
    /// total rate, in process on the client cores) and keep the check in
    /// that run. `load` and `users` workloads.
    #[serde(default)]
    pub check_client: bool,
}

impl Workload {
    /// Runs per server per round (`slices`, at least 1).
    pub fn slice_count(&self) -> u32 {
        self.slices.unwrap_or(1).max(1)
    }
}

/// How long a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// The protocol's warm-up and window.
    #[default]
    Window,
    /// The workload's own counts (connections, requests per user).
    Count,
}

/// What the report compares.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    /// Server every other server is also compared with on every step (default: none).
    #[serde(default)]
    pub baseline: Option<String>,
    /// Default metric for the summary (default reply_rate).
    #[serde(default)]
    pub metric: Option<Metric>,
    /// Extra metrics shown in every table (default: all).
    #[serde(default)]
    pub metrics: Vec<Metric>,
}

/// Parses a study file; `origin` names it in errors. Errors name the line.
///
/// Every key is checked: an unknown key is refused with the table it is in
/// and the keys that table takes, a key that would have no effect (for the
/// workload's kind, its `measure`, the server's kind) is refused with what
/// to write instead. The top-level `repetitions` sets
/// `protocol.min_repetitions`.
pub fn parse(text: &str, origin: &str) -> Result<StudyFile> {
    let mut study: StudyFile = toml::from_str(text).map_err(|e| {
        let (line, col) = match e.span() {
            Some(span) => line_col(text, span.start),
            None => (0, 0),
        };
        let msg = explain(e.message());
        if line > 0 {
            anyhow::anyhow!("{origin}:{line}:{col}: {msg}")
        } else {
            anyhow::anyhow!("{origin}: {msg}")
        }
    })?;
    apply_repetitions(&mut study, text).map_err(|e| anyhow::anyhow!("{origin}: {e:#}"))?;
    validate(&study, text).map_err(|e| anyhow::anyhow!("{origin}: {e:#}"))?;
    Ok(study)
}

/// The top-level `repetitions = N` is `[protocol] min_repetitions = N`
/// (raising the default `max_repetitions` to N when it is below); both
/// written with different values is refused, so neither is silently lost.
fn apply_repetitions(s: &mut StudyFile, text: &str) -> Result<()> {
    let Some(n) = s.repetitions else {
        return Ok(());
    };
    let at = line_of_key(text, "repetitions");
    if n < 2 {
        bail!(
            "{at}repetitions = {n}: at least 2 (a confidence interval needs two values); it is the fewest repetitions of every workload"
        );
    }
    // Which [protocol] keys were written (the parsed values carry defaults).
    let written = |key: &str| {
        toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|t| t.get("protocol")?.as_table()?.get(key).cloned())
            .is_some()
    };
    let p = &mut s.protocol;
    if written("min_repetitions") && p.min_repetitions != n {
        bail!(
            "{at}top-level repetitions = {n} and [protocol] min_repetitions = {} are the same setting (the fewest repetitions of every workload): give one of them",
            p.min_repetitions
        );
    }
    p.min_repetitions = n;
    if !written("max_repetitions") {
        p.max_repetitions = p.max_repetitions.max(n);
    }
    Ok(())
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |p| before.len() - p - 1)
        + 1;
    (line, col)
}

/// Line of the first occurrence of `needle` (for semantic errors), if any.
fn line_of(text: &str, needle: &str) -> String {
    match text.find(needle) {
        Some(off) => format!("line {}: ", line_col(text, off).0),
        None => String::new(),
    }
}

/// Line of the first line that sets `key` (`key = …`), if any.
fn line_of_key(text: &str, key: &str) -> String {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or_else(String::new, |i| format!("line {}: ", i + 1))
}

fn validate(s: &StudyFile, text: &str) -> Result<()> {
    if s.servers.is_empty() {
        bail!("no [[servers]]: a study needs at least one server");
    }
    if s.workloads.is_empty() {
        bail!("no [[workloads]]: a study needs at least one workload");
    }
    validate_protocol(&s.protocol, text)?;
    let names: Vec<String> = expand_servers(s).into_iter().map(|x| x.name).collect();
    let mut seen = std::collections::BTreeSet::new();
    for n in &names {
        if !seen.insert(n) {
            bail!("two servers are both named '{n}': give them distinct `name`s");
        }
    }
    for sv in &s.servers {
        let at = sv
            .name
            .as_deref()
            .map(|n| line_of(text, &format!("\"{n}\"")))
            .unwrap_or_default();
        match sv.kind {
            ServerKind::Command if sv.command.is_empty() => {
                bail!("{at}server of kind \"command\" needs `command = [\"program\", \"arg\", …]`")
            }
            _ => {}
        }
        if let Some(OneOrMany::Many(v)) = &sv.workers {
            if v.is_empty() {
                bail!("{at}`workers = []` is empty");
            }
        }
        server_keys_take_effect(sv).with_context(|| {
            format!(
                "{at}server {}",
                sv.name.as_deref().unwrap_or(sv.kind.as_str())
            )
        })?;
    }
    let corpus_names = corpus_targets(&s.corpus);
    for w in &s.workloads {
        validate_workload(w, &s.protocol, text, &names, &corpus_names)?;
        workload_protocol_fits(w, s.tls).with_context(|| {
            format!(
                "{}workload '{}'",
                line_of(text, &format!("\"{}\"", w.name)),
                w.name
            )
        })?;
    }
    for q in &s.questions {
        let at = line_of(text, &q.ask);
        for e in &q.evidence {
            if !s.workloads.iter().any(|w| w.name == e.workload) {
                bail!(
                    "{at}question evidence names workload '{}', which the study does not declare",
                    e.workload
                );
            }
            for sv in [&e.server, &e.versus] {
                if !names.iter().any(|n| n == sv) {
                    bail!("{at}question evidence names server '{sv}', which the study does not declare (have: {})", names.join(", "));
                }
            }
            if let Some(x) = &e.seed_says {
                if !["better", "worse", "same"].contains(&x.as_str()) {
                    bail!("{at}seed_says must be \"better\", \"worse\" or \"same\", not \"{x}\"");
                }
            }
        }
    }
    if let Some(m) = s.compare.metric {
        judged_metric(m, &line_of(text, "metric"), "compare.metric")?;
    }
    for e in s.questions.iter().flat_map(|q| &q.evidence) {
        if let Some(m) = e.metric {
            judged_metric(m, &line_of(text, m.key()), "question evidence")?;
        }
    }
    if let Some(b) = &s.compare.baseline {
        if !names.iter().any(|n| n == b) {
            bail!(
                "{}compare.baseline '{b}' is not a declared server (have: {})",
                line_of(text, "baseline"),
                names.join(", ")
            );
        }
    }
    Ok(())
}

/// Checks the `[protocol]` table.
fn validate_protocol(p: &ProtocolSpec, text: &str) -> Result<()> {
    if !(p.warmup_s >= 0.0 && p.warmup_s <= 600.0) {
        bail!(
            "{}protocol.warmup_s must be between 0 and 600",
            line_of(text, "warmup_s")
        );
    }
    if !(p.window_s >= 0.1 && p.window_s <= 3600.0) {
        bail!(
            "{}protocol.window_s must be between 0.1 and 3600",
            line_of(text, "window_s")
        );
    }
    if p.min_repetitions < 2 || p.max_repetitions < p.min_repetitions || p.max_repetitions > 1000 {
        bail!(
            "{}protocol: need 2 <= min_repetitions <= max_repetitions <= 1000 (a confidence interval needs two values); have min_repetitions = {}, max_repetitions = {}",
            line_of(text, "repetitions"),
            p.min_repetitions,
            p.max_repetitions
        );
    }
    if !(p.min_effect > 0.0 && p.min_effect < 1.0) {
        let key = if line_of_key(text, "min_effect").is_empty() {
            "delta"
        } else {
            "min_effect"
        };
        bail!(
            "{}protocol.{key} = {} must be a fraction between 0 and 1, both excluded (0.05: differences under 5 % are of no interest); it is δ, the smallest relative effect a verdict calls a win",
            line_of_key(text, key),
            p.min_effect
        );
    }
    if let Some(b) = p.budget_s {
        if !(b.is_finite() && b > 0.0) {
            bail!(
                "{}protocol.budget_s = {b} must be a number of seconds above 0 (or left out: the runner's default)",
                line_of_key(text, "budget_s")
            );
        }
    }
    if !(p.alpha > 0.0 && p.alpha < 0.5) {
        bail!(
            "{}protocol.alpha must be between 0 and 0.5",
            line_of(text, "alpha")
        );
    }
    Ok(())
}

/// Checks one workload against the study's servers and corpus.
fn validate_workload(
    w: &Workload,
    p: &ProtocolSpec,
    text: &str,
    names: &[String],
    corpus_names: &[String],
) -> Result<()> {
    let at = line_of(text, &format!("\"{}\"", w.name));
    for sv in &w.servers {
        if !names.iter().any(|n| n == sv) {
            bail!("{at}workload '{}' names server '{sv}', which the study does not declare (have: {})", w.name, names.join(", "));
        }
    }
    check_target(&w.target, corpus_names).with_context(|| format!("{at}workload '{}'", w.name))?;
    if let Some(m) = w.metric {
        judged_metric(m, &at, &format!("workload '{}'", w.name))?;
    }
    if let Some(v) = &w.vary {
        if v.values.is_empty() {
            bail!("{at}workload '{}': vary.values is empty", w.name);
        }
        for val in &v.values {
            match (v.param, val) {
                (VaryParam::Target, VaryValue::Text(t)) => check_target(t, corpus_names)
                    .with_context(|| format!("{at}workload '{}'", w.name))?,
                (VaryParam::Target, VaryValue::Num(_)) => {
                    bail!(
                        "{at}workload '{}': vary target values must be strings",
                        w.name
                    )
                }
                (_, VaryValue::Text(t)) => {
                    bail!(
                        "{at}workload '{}': vary {} values must be numbers, got \"{t}\"",
                        w.name,
                        v.param.as_str()
                    )
                }
                (_, VaryValue::Num(n)) if *n <= 0.0 => {
                    bail!(
                        "{at}workload '{}': vary {} values must be positive",
                        w.name,
                        v.param.as_str()
                    )
                }
                _ => {}
            }
        }
    }
    match w.kind {
        WorkloadKind::Users => {
            let varied = w.vary.as_ref().is_some_and(|v| v.param == VaryParam::Users);
            if w.users.is_none() && !varied {
                bail!("{at}workload '{}' (users) needs `users = N`", w.name);
            }
        }
        WorkloadKind::Sweep => {
            if !w.low_rate.is_some_and(|lo| lo > 0.0) {
                bail!(
                    "{at}workload '{}' (sweep) needs low_rate > 0: the capacity search starts there and doubles",
                    w.name
                );
            }
        }
        WorkloadKind::Load => {}
        WorkloadKind::Idle => {
            validate_idle(w).with_context(|| format!("{at}workload '{}'", w.name))?
        }
    }
    if w.kind != WorkloadKind::Idle
        && (w.idle_conns.is_some()
            || w.idle_send.is_some()
            || w.idle_connect_s.is_some()
            || w.vary
                .as_ref()
                .is_some_and(|v| v.param == VaryParam::IdleConns))
    {
        bail!(
            "{at}workload '{}': idle_conns, idle_send, idle_connect_s and vary idle_conns need kind = \"idle\"",
            w.name
        );
    }
    if w.rate.is_some_and(|r| r <= 0.0) {
        bail!("{at}workload '{}': rate must be positive", w.name);
    }
    workload_keys_take_effect(w, p).with_context(|| format!("{at}workload '{}'", w.name))?;
    workload_loss_fits(w).with_context(|| format!("{at}workload '{}'", w.name))?;
    workload_probe_fits(w).with_context(|| format!("{at}workload '{}'", w.name))?;
    if w.window_s.is_some_and(|x| !(0.1..=3600.0).contains(&x))
        || w.warmup_s.is_some_and(|x| !(0.0..=600.0).contains(&x))
    {
        bail!(
            "{at}workload '{}': window_s must be in 0.1..3600 and warmup_s in 0..600",
            w.name
        );
    }
    Ok(())
}

/// Most streams a workload may keep in flight per connection.
pub const MAX_STREAMS: u32 = 1000;

/// Refuses a workload whose `protocol` cannot run it: HTTP/2 and HTTP/3
/// have no pipelining (their requests are concurrent streams), an idle
/// workload's partial request lines are HTTP/1.1 text, and HTTP/3 runs
/// over QUIC, which is always encrypted.
pub fn workload_protocol_fits(w: &Workload, tls: bool) -> Result<()> {
    let p = w.protocol;
    if let Some(n) = w.streams {
        if p == Protocol::H1 {
            bail!("streams = {n} needs protocol = \"h2\" or \"h3\" (concurrent streams on one connection); over HTTP/1.1 use pipeline = {n}");
        }
        if n > MAX_STREAMS {
            bail!("streams = {n} is more than {MAX_STREAMS}, more than servers allow on one connection (nginx and h2o: 100, Caddy: 250)");
        }
    }
    if p == Protocol::H1 {
        return Ok(());
    }
    let piped = w.pipeline.is_some_and(|n| n > 1);
    let varied = w
        .vary
        .as_ref()
        .is_some_and(|v| v.param == VaryParam::Pipeline);
    if piped || varied {
        bail!(
            "protocol = \"{p}\" cannot pipeline (`{}`): {} sends its requests as concurrent streams on one connection, not one after another on the wire; remove it, or use protocol = \"h1\" to measure pipelining",
            if varied { "vary pipeline" } else { "pipeline" },
            p.label()
        );
    }
    if w.kind == WorkloadKind::Idle && w.idle_send == Some(IdleSend::Partial) {
        bail!(
            "idle_send = \"partial\" holds unfinished HTTP/1.1 request lines, which a {} server does not read as a request; use idle_send = \"silent\" or protocol = \"h1\"",
            p.label()
        );
    }
    if p == Protocol::H3 && !tls {
        bail!(
            "protocol = \"h3\" needs HTTPS: HTTP/3 runs over QUIC, which is always encrypted; write `tls = true` at the top level of the study"
        );
    }
    Ok(())
}

/// Refuses a `probe` rate out of range or in an `idle` workload.
fn workload_probe_fits(w: &Workload) -> Result<()> {
    let Some(rate) = w.probe else {
        return Ok(());
    };
    if w.kind == WorkloadKind::Idle {
        bail!("`probe` applies to `load`, `users` and `sweep` workloads, not `idle`");
    }
    httplab_load::ProbeSpec { rate, conns: 1 }
        .validate()
        .map_err(|e| anyhow::anyhow!("`probe = {rate}`: {e:#}"))
}

/// Refuses a `loss_pct` out of range or in a workload that does not run
/// through one load run per repetition, and `check_client` there too.
fn workload_loss_fits(w: &Workload) -> Result<()> {
    if w.check_client && matches!(w.kind, WorkloadKind::Sweep | WorkloadKind::Idle) {
        bail!(
            "`check_client` applies to `load` and `users` workloads, not `{}`",
            w.kind.as_str()
        );
    }
    let Some(pct) = w.loss_pct else {
        return Ok(());
    };
    if matches!(w.kind, WorkloadKind::Sweep | WorkloadKind::Idle) {
        bail!(
            "`loss_pct` applies to `load` and `users` workloads, not `{}`",
            w.kind.as_str()
        );
    }
    if !(pct.is_finite() && pct > 0.0 && pct <= 50.0) {
        bail!("`loss_pct` must be a percentage above 0 and at most 50, not {pct}");
    }
    Ok(())
}

/// Target names the corpus provides: `/path`, `set:NAME`, `page:NAME`.
fn corpus_targets(c: &Corpus) -> Vec<String> {
    let mut v: Vec<String> = c
        .files
        .iter()
        .map(|f| format!("/{}", f.path.trim_start_matches('/')))
        .collect();
    v.extend(c.sets.iter().map(|s| format!("set:{}", s.name)));
    v.extend(c.pages.iter().map(|p| format!("page:{}", p.name)));
    v.extend(c.pages.iter().map(|p| format!("/{}.html", p.name)));
    v
}

fn check_target(t: &str, known: &[String]) -> Result<()> {
    if known.iter().any(|k| k == t) {
        return Ok(());
    }
    if t.starts_with('/') {
        // Any path is allowed (e.g. a 404 probe), but warn-worthy typos of
        // corpus files are caught when the path is close to one.
        return Ok(());
    }
    bail!(
        "target '{t}' is not in the corpus (have: {})",
        known.join(", ")
    )
}

/// Refuses server keys that would have no effect on this kind of server.
fn server_keys_take_effect(sv: &ServerSpec) -> Result<()> {
    use ServerKind::{Apache, Caddy, Command, H2o, Httplab, Lighttpd, Nginx};
    let kind = sv.kind;
    let only = |key: &str, given: bool, kinds: &[ServerKind], what: &str| -> Result<()> {
        if given && !kinds.contains(&kind) {
            bail!(
                "`{key}` has no effect on a `{}` server: {what}",
                kind.as_str()
            );
        }
        Ok(())
    };
    only(
        "model",
        sv.model.is_some(),
        &[Httplab],
        "it picks `httplab serve`'s concurrency model (kind = \"httplab\" only)",
    )?;
    only(
        "mode",
        sv.mode.is_some(),
        &[Httplab],
        "it sets `httplab serve`'s keep-alive and pipelining (elsewhere: `keep_alive`)",
    )?;
    only(
        "args",
        !sv.args.is_empty(),
        &[Httplab],
        "it adds arguments to `httplab serve` (a command server's argv is `command`; a peer's settings go in `extra_config`)",
    )?;
    only(
        "mpm",
        sv.mpm.is_some(),
        &[Apache],
        "it picks Apache's MPM (kind = \"apache\" only)",
    )?;
    only(
        "threads_per_child",
        sv.threads_per_child.is_some(),
        &[Apache],
        "it sets Apache's ThreadsPerChild (kind = \"apache\" only)",
    )?;
    if kind == Apache && sv.mpm.is_some_and(|m| !m.threaded()) && sv.threads_per_child.is_some() {
        bail!("`threads_per_child` has no effect with mpm = \"prefork\" (one thread per process; `workers` sets the processes)");
    }
    for (key, given) in [
        ("command", !sv.command.is_empty()),
        ("env", !sv.env.is_empty()),
        ("version_command", !sv.version_command.is_empty()),
    ] {
        only(
            key,
            given,
            &[Command],
            "only a kind = \"command\" server runs a command of yours",
        )?;
    }
    only(
        "extra_config",
        !sv.extra_config.is_empty(),
        &[Nginx, Apache, Lighttpd, H2o, Caddy],
        "only the peers get a configuration file from httplab (httplab: `args`; a command server configures itself)",
    )?;
    only(
        "sendfile",
        sv.sendfile.is_some(),
        &[Nginx, Apache, Lighttpd],
        "only nginx, Apache and lighttpd get a sendfile switch in their generated configuration",
    )?;
    only(
        "keep_alive",
        sv.keep_alive.is_some(),
        &[Httplab, Nginx, Apache, Lighttpd, H2o, Caddy],
        "a command server configures itself",
    )?;
    if kind == Httplab && sv.mode.is_some() && sv.keep_alive.is_some() {
        bail!("`keep_alive` has no effect next to `mode`, which sets it: \"close\" turns keep-alive off, \"keep-alive\" and \"pipeline\" turn it on");
    }
    if kind == ServerKind::Ngtcp2 && sv.workers.is_some() {
        bail!("`workers` has no effect on ngtcp2's example server: it serves with one thread");
    }
    if kind == Command && sv.workers.is_some() {
        let uses = sv
            .command
            .iter()
            .chain(sv.env.values())
            .any(|a| a.contains("{workers}"));
        if !uses {
            bail!("`workers` has no effect on this command server: neither its `command` nor its `env` mentions {{workers}}");
        }
    }
    if sv
        .ready_timeout_s
        .is_some_and(|t| !(0.1..=600.0).contains(&t))
    {
        bail!("ready_timeout_s must be between 0.1 and 600 seconds");
    }
    Ok(())
}

/// Refuses workload keys that would have no effect given the workload's
/// kind, its `measure` and whether its client runs open or closed loop, and
/// values the runner would silently change.
fn workload_keys_take_effect(w: &Workload, p: &ProtocolSpec) -> Result<()> {
    let vary = w.vary.as_ref().map(|v| v.param);
    let kind = w.kind.as_str();
    let counted = w.measure == Measure::Count;
    // Open loop: connections at `rate` or one after another; closed loop:
    // `users` each waiting for their reply (an idle workload's client is
    // closed loop unless it has a rate).
    let open = match w.kind {
        WorkloadKind::Load | WorkloadKind::Sweep => true,
        WorkloadKind::Users => false,
        WorkloadKind::Idle => w.rate.is_some() || vary == Some(VaryParam::Rate),
    };
    let vary_is = |param: VaryParam| vary == Some(param);
    if let Some(k) = w.slices {
        if matches!(w.kind, WorkloadKind::Sweep | WorkloadKind::Idle) {
            bail!("`slices` has no effect in a `{kind}` workload: a capacity search or an idle hold is one run per round; slices are for `load` and `users` workloads");
        }
        if !(1..=8).contains(&k) {
            bail!("`slices` must be 1 to 8 (runs per server per round), not {k}");
        }
        if counted && k > 1 {
            bail!("`slices` needs `measure = \"window\"`: a counted run cannot be divided into slices");
        }
    }
    if w.kind != WorkloadKind::Sweep && w.cpu_quota.is_some() {
        bail!("`cpu_quota` has no effect in a `{kind}` workload: only a `sweep` (a capacity search) runs its servers under a CPU quota");
    }
    if let Some(q) = w.cpu_quota {
        if !(q.is_finite() && (0.05..=64.0).contains(&q)) {
            bail!("`cpu_quota` must be a share of CPU between 0.05 and 64 cores (e.g. 0.25 for a quarter core), not {q}");
        }
    }
    if w.kind != WorkloadKind::Sweep && w.low_rate.is_some() {
        bail!("`low_rate` has no effect in a `{kind}` workload: only a `sweep` (a capacity search) starts there");
    }
    if w.kind == WorkloadKind::Sweep {
        if w.rate.is_some() {
            bail!("`rate` has no effect in a sweep: its rates are the capacity search's, from `low_rate` up (for fixed rates: kind = \"load\" with vary = {{ param = \"rate\", values = [...] }})");
        }
        if let Some(v) = &w.vary {
            bail!(
                "`vary` ({}) has no effect in a sweep: the capacity search is one step; give each value its own sweep workload",
                v.param.as_str()
            );
        }
    }
    if open {
        let why = if w.kind == WorkloadKind::Idle {
            "an idle workload with a `rate` runs its client open loop"
        } else {
            "its connections open on a schedule (`rate`) or one after another, without users"
        };
        for (key, given) in [
            ("users", w.users.is_some() || vary_is(VaryParam::Users)),
            ("requests", w.requests.is_some()),
            ("think_ms", w.think_ms.is_some()),
        ] {
            if given {
                bail!("`{key}` has no effect in this `{kind}` workload: {why}; closed-loop users are kind = \"users\" (or an idle workload without `rate`)");
            }
        }
    } else {
        for (key, given) in [
            ("rate", w.rate.is_some() || vary_is(VaryParam::Rate)),
            (
                "num_conns",
                w.num_conns.is_some() || vary_is(VaryParam::NumConns),
            ),
        ] {
            if given {
                bail!("`{key}` has no effect in this `{kind}` workload: its `users` each wait for their reply (closed loop); open-loop connections are kind = \"load\"");
            }
        }
    }
    if counted {
        if w.window_s.is_some() {
            bail!("`window_s` has no effect with measure = \"count\": the workload's own counts (`num_conns`, `requests`) set how long a run lasts");
        }
    } else {
        let count_key = if open { "num_conns" } else { "requests" };
        let given = if open {
            w.num_conns.is_some() || vary_is(VaryParam::NumConns)
        } else {
            w.requests.is_some()
        };
        if given {
            bail!("`{count_key}` has no effect with measure = \"window\" (the default): every run lasts its warm-up plus `window_s`; write measure = \"count\" to run the workload's own counts instead");
        }
    }
    workload_values_in_range(w, p)
}

/// Refuses workload values out of their ranges (counts of 0, negative
/// times, repetitions that could not give an interval).
fn workload_values_in_range(w: &Workload, p: &ProtocolSpec) -> Result<()> {
    for (key, v) in [
        ("num_conns", w.num_conns),
        ("num_calls", w.num_calls),
        ("users", w.users),
        ("requests", w.requests),
        ("pipeline", w.pipeline.map(u64::from)),
        ("streams", w.streams.map(u64::from)),
    ] {
        if v == Some(0) {
            bail!("{key} must be at least 1");
        }
    }
    if let Some(v) = &w.vary {
        let whole = matches!(
            v.param,
            VaryParam::Users
                | VaryParam::NumCalls
                | VaryParam::NumConns
                | VaryParam::Pipeline
                | VaryParam::IdleConns
        );
        for val in &v.values {
            if let VaryValue::Num(n) = val {
                if whole && (n.fract() != 0.0 || *n < 1.0) {
                    bail!(
                        "vary {} values must be whole numbers from 1 up, not {n}",
                        v.param.as_str()
                    );
                }
            }
        }
    }
    if w.think_ms.is_some_and(|t| !(t >= 0.0 && t.is_finite())) {
        bail!("think_ms must be 0 or more milliseconds");
    }
    if w.timeout_s.is_some_and(|t| !(0.01..=600.0).contains(&t)) {
        bail!("timeout_s must be between 0.01 and 600 seconds");
    }
    if w.max_duration_s
        .is_some_and(|t| !(0.1..=3600.0).contains(&t))
    {
        bail!("max_duration_s must be between 0.1 and 3600 seconds");
    }
    if let Some(n) = w.repetitions {
        if n < 2 {
            bail!("repetitions = {n}: at least 2 (a confidence interval needs two values)");
        }
    }
    if let Some(max) = w.max_repetitions {
        let min = w.repetitions.unwrap_or(p.min_repetitions);
        if max < min {
            bail!(
                "max_repetitions = {max} is below the fewest repetitions ({min}, from {}): it would have no effect",
                if w.repetitions.is_some() {
                    "the workload's `repetitions`"
                } else {
                    "[protocol] min_repetitions"
                }
            );
        }
    }
    Ok(())
}

/// A server after expanding `workers` lists, with its final name.
#[derive(Debug, Clone)]
pub struct ServerInstance {
    /// Report label.
    pub name: String,
    /// The entry it came from.
    pub spec: ServerSpec,
    /// Worker count (None: the server's default).
    pub workers: Option<u32>,
}

/// Expands `workers = [..]` entries into one server each, with names.
pub fn expand_servers(s: &StudyFile) -> Vec<ServerInstance> {
    let mut out = Vec::new();
    for sv in &s.servers {
        let values: Vec<Option<u32>> = match &sv.workers {
            None => vec![None],
            Some(w) => w.values().into_iter().map(Some).collect(),
        };
        let many = values.len() > 1;
        for w in values {
            let base = sv.name.clone().unwrap_or_else(|| default_name(sv));
            let name = match (many, w) {
                (true, Some(w)) => format!("{base} ×{w}"),
                _ => base,
            };
            out.push(ServerInstance {
                name,
                spec: sv.clone(),
                workers: w,
            });
        }
    }
    out
}

fn default_name(sv: &ServerSpec) -> String {
    match sv.kind {
        ServerKind::Httplab => {
            let mut n = format!("httplab {}", sv.model.unwrap_or_default().word());
            if let Some(m) = sv.mode {
                n.push_str(&format!(" ({})", m.word()));
            }
            n
        }
        ServerKind::Apache => format!("apache {}", sv.mpm.unwrap_or_default().word()),
        ServerKind::Command => sv
            .command
            .first()
            .map(|c| {
                std::path::Path::new(c)
                    .file_name()
                    .map_or(c.clone(), |f| f.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "command".into()),
        k => k.as_str().to_string(),
    }
}

/// One table of a study file and the keys it takes, read from the types
/// themselves (see [`key_tables`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTable {
    /// Keys leading to it from the top level: `[]` for the top level,
    /// `["workloads", "vary"]` for a workload's `vary`.
    pub path: Vec<&'static str>,
    /// How docs/study-format.md and error messages name it: `top-level`,
    /// `[protocol]`, `[[servers]]`, `[corpus] files`, `[[workloads]] vary`.
    pub label: String,
    /// Every key it accepts, aliases included, in declaration order.
    pub keys: Vec<&'static str>,
}

/// Every table a study file can have, with the keys each accepts: the
/// top level and every key whose value is a table or an array of tables,
/// found by driving the serde `Deserialize` impls themselves down each key
/// (so the list cannot drift from what [`parse`] accepts).
pub fn key_tables() -> Vec<KeyTable> {
    let mut out: Vec<KeyTable> = Vec::new();
    let mut queue = std::collections::VecDeque::from([(Vec::new(), String::new())]);
    while let Some((path, parent_label)) = queue.pop_front() {
        let mut found = probe::Found::default();
        let _ = StudyFile::deserialize(probe::Probe {
            rest: &path,
            in_seq: false,
            found: &mut found,
        });
        let Some(fields) = found.fields else {
            continue;
        };
        let label = match path.as_slice() {
            [] => "top-level".to_string(),
            [one] if found.array => format!("[[{one}]]"),
            [one] => format!("[{one}]"),
            [.., last] => format!("{parent_label} {last}"),
        };
        if path.len() < 4 {
            for k in fields {
                let mut p = path.clone();
                p.push(*k);
                queue.push_back((p, label.clone()));
            }
        }
        out.push(KeyTable {
            path,
            label,
            keys: fields.to_vec(),
        });
    }
    out
}

/// A serde `Deserializer` that walks one path of keys into the study file's
/// types and records the field list of the struct at its end (see
/// [`key_tables`]). It never produces a value: every probe ends in an error.
mod probe {
    use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

    type Error = de::value::Error;

    /// What a probe found at the end of its path.
    #[derive(Default)]
    pub struct Found {
        /// The struct's keys (None: the path does not end in a table).
        pub fields: Option<&'static [&'static str]>,
        /// It is an array of tables (`[[servers]]`).
        pub array: bool,
    }

    pub struct Probe<'a> {
        /// Keys still to follow.
        pub rest: &'a [&'static str],
        /// The value being probed is an element of an array.
        pub in_seq: bool,
        pub found: &'a mut Found,
    }

    fn stop() -> Error {
        de::Error::custom("probe")
    }

    impl<'de> de::Deserializer<'de> for Probe<'_> {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
            Err(stop())
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            match self.rest.split_first() {
                None => {
                    self.found.fields = Some(fields);
                    self.found.array = self.in_seq;
                    Err(stop())
                }
                Some((key, rest)) => visitor.visit_map(OneKey {
                    key: Some(key),
                    value: Some(Probe {
                        rest,
                        in_seq: false,
                        found: self.found,
                    }),
                }),
            }
        }

        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_some(self)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_seq(OneElement {
                value: Some(Probe {
                    rest: self.rest,
                    in_seq: true,
                    found: self.found,
                }),
            })
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf unit unit_struct tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    /// A map of one key whose value is the next probe.
    struct OneKey<'a> {
        key: Option<&'static str>,
        value: Option<Probe<'a>>,
    }

    impl<'de> MapAccess<'de> for OneKey<'_> {
        type Error = Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Error> {
            match self.key.take() {
                Some(k) => seed.deserialize(k.into_deserializer()).map(Some),
                None => Ok(None),
            }
        }

        fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
            match self.value.take() {
                Some(p) => seed.deserialize(p),
                None => Err(stop()),
            }
        }
    }

    /// An array of one element, the next probe.
    struct OneElement<'a> {
        value: Option<Probe<'a>>,
    }

    impl<'de> SeqAccess<'de> for OneElement<'_> {
        type Error = Error;

        fn next_element_seed<S: DeserializeSeed<'de>>(
            &mut self,
            seed: S,
        ) -> Result<Option<S::Value>, Error> {
            match self.value.take() {
                Some(p) => seed.deserialize(p).map(Some),
                None => Ok(None),
            }
        }
    }
}

/// Keys that once meant something and now have none: what to write instead.
const RETIRED: &[(&str, &str, &str)] = &[
    (
        "[protocol]",
        "precision",
        "rounds no longer stop on a precision target: every step runs min_repetitions rounds, then the sequential design gives budget_s seconds of extra rounds to the comparisons nearest a decision (up to max_repetitions); remove the line",
    ),
    (
        "top-level",
        "driver",
        "every workload runs through `httplab load`; remove the line",
    ),
    (
        "[[workloads]]",
        "driver",
        "every workload runs through `httplab load`; remove the line",
    ),
    (
        "[[workloads]]",
        "high_rate",
        "a sweep is a capacity search from `low_rate` (doubling until the server saturates, then bisecting) with no top rate; for fixed rates use kind = \"load\" with vary = { param = \"rate\", values = [...] }",
    ),
    (
        "[[workloads]]",
        "rate_step",
        "a sweep is a capacity search from `low_rate` (doubling, then bisecting), not fixed steps; for fixed rates use kind = \"load\" with vary = { param = \"rate\", values = [...] }",
    ),
    (
        "[[workloads]]",
        "step_s",
        "each probe of a sweep's capacity search runs the protocol's warm-up and window; set `window_s` (and `warmup_s`) on the workload instead",
    ),
];

/// A deserialization message made readable: an unknown key is named with its
/// table, what to write instead (a retired key, or a key of another table)
/// and the keys the table takes. Other messages pass through.
fn explain(msg: &str) -> String {
    let Some(rest) = msg.strip_prefix("unknown field `") else {
        return msg.to_string();
    };
    let Some((key, expected)) = rest.split_once('`') else {
        return msg.to_string();
    };
    let expected: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let tables = key_tables();
    let Some(table) = tables
        .iter()
        .find(|t| t.keys.len() == expected.len() && t.keys.iter().all(|k| expected.contains(k)))
    else {
        return msg.to_string();
    };
    let label = &table.label;
    let mut out = format!("unknown key `{key}` in {label}");
    if let Some((_, _, why)) = RETIRED.iter().find(|(t, k, _)| t == label && *k == key) {
        out.push_str(&format!(": `{key}` has no effect any more: {why}"));
        return out;
    }
    let elsewhere: Vec<&str> = tables
        .iter()
        .filter(|t| t.keys.contains(&key))
        .map(|t| t.label.as_str())
        .collect();
    if !elsewhere.is_empty() {
        out.push_str(&format!(
            " (`{key}` is a key of {}{})",
            elsewhere.join(", "),
            if elsewhere.contains(&"top-level") {
                ": top-level keys go before the first [table]"
            } else {
                ""
            }
        ));
    }
    out.push_str(&format!("; {label} takes {}", table.keys.join(", ")));
    out
}

// ---- idle workloads ----

/// Most idle connections one step may hold.
pub const MAX_IDLE_CONNS: u64 = 100_000;
/// Default number of idle connections.
pub const DEFAULT_IDLE_CONNS: u64 = 100;

/// Checks an idle workload's own fields.
pub fn validate_idle(w: &Workload) -> Result<()> {
    let check = |k: f64| -> Result<()> {
        if !(k >= 1.0 && k <= MAX_IDLE_CONNS as f64 && k.fract() == 0.0) {
            bail!("idle_conns must be a whole number from 1 to {MAX_IDLE_CONNS}, not {k}");
        }
        Ok(())
    };
    if let Some(k) = w.idle_conns {
        check(k as f64)?;
    }
    if let Some(v) = w.vary.as_ref().filter(|v| v.param == VaryParam::IdleConns) {
        for x in &v.values {
            match x {
                VaryValue::Num(n) => check(*n)?,
                VaryValue::Text(t) => {
                    bail!("vary idle_conns values must be numbers, got \"{t}\"")
                }
            }
        }
    }
    if w.idle_connect_s.is_some_and(|s| !(s > 0.0 && s <= 600.0)) {
        bail!("idle_connect_s must be between 0 and 600 seconds");
    }
    if w.users.is_some() && w.rate.is_some() {
        bail!(
            "give the normal client either `users` (closed loop) or `rate` (open loop), not both"
        );
    }
    Ok(())
}
