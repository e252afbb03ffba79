//! [`LoadSpec::to_args`]: a spec as the `httplab load` command line that
//! parses back to it (httperf spellings, defaults left out), recorded in a
//! result's `config.command_line` so it can be read and rerun.

use crate::live::LiveSpec;
use crate::spec::{
    Arrival, Dist, Http2Spec, LoadSpec, PrintWhat, Workload, DEFAULT_LAG_THRESHOLD, DEFAULT_SEED,
};
use crate::tls::{TlsSpec, TlsVersion};

/// Arguments under construction.
struct Args(Vec<String>);

impl Args {
    fn flag(&mut self, name: &str) {
        self.0.push(name.to_string());
    }

    /// `name value`, or `name=value` when the value starts with `-` (it
    /// would read as an option).
    fn opt(&mut self, name: &str, value: impl ToString) {
        let v = value.to_string();
        if v.starts_with('-') {
            self.0.push(format!("{name}={v}"));
        } else {
            self.0.push(name.to_string());
            self.0.push(v);
        }
    }

    fn opt_if<T: ToString>(&mut self, name: &str, value: Option<T>) {
        if let Some(v) = value {
            self.opt(name, v);
        }
    }

    fn flag_if(&mut self, name: &str, on: bool) {
        if on {
            self.flag(name);
        }
    }
}

/// A path as an argument.
fn path(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

impl LoadSpec {
    /// The `httplab load` arguments (without the program name) that
    /// [`crate::parse_args`] parses back to this spec: every option the
    /// command line has, values that are the command line's defaults left
    /// out. Numbers are written in full (`--think 0.002`, not `2ms`), so
    /// they parse back to the same value.
    ///
    /// What no command line can say is not written: `command_line` itself,
    /// `live.metrics` (a handle), TLS's `sni` and `alpn` (the command line
    /// always sets none and `http/1.1`), `uris` that were not read from a
    /// file (`uri_list` None), a non-UTF-8 body (written lossily), an
    /// unverified TLS with a CA file, and `Arrival::Concurrent(n)` with
    /// n > 1 outside closed-loop users.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Args(Vec::new());
        self.target_args(&mut a);
        self.request_args(&mut a);
        self.load_args(&mut a);
        self.connection_args(&mut a);
        self.output_args(&mut a);
        self.extension_args(&mut a);
        self.protocol_args(&mut a);
        live_args(&self.live, &mut a);
        a.0
    }

    /// Server, port and path; over verified TLS without a CA file, an
    /// `https://` URL (the only spelling that verifies against the
    /// system's roots); else `--ssl` with `--cacert` when verified.
    fn target_args(&self, a: &mut Args) {
        let system_roots = self
            .tls
            .as_ref()
            .is_some_and(|t| t.verify && t.cacert.is_none());
        if system_roots {
            let host = if self.server.contains(':') {
                format!("[{}]", self.server)
            } else {
                self.server.clone()
            };
            a.flag(&format!("https://{host}:{}/", self.port));
        } else {
            a.opt("--server", &self.server);
        }
        a.opt("--port", self.port);
        a.opt("--uri", &self.uri);
        if let Some(t) = &self.tls {
            tls_args(t, system_roots, a);
        }
    }

    /// The request: paths, method, version, headers, body.
    fn request_args(&self, a: &mut Args) {
        a.opt_if("--uri-list", self.uri_list.as_deref().map(path));
        a.opt_if("--server-name", self.host_header.as_ref());
        if self.method != "GET" {
            a.opt("--method", &self.method);
        }
        if self.http_version != "1.1" {
            a.opt("--http-version", &self.http_version);
        }
        for h in &self.headers {
            a.opt("--add-header", h);
        }
        a.flag_if("--no-host-hdr", self.no_host_hdr);
        a.opt_if("--body", self.body.as_deref().map(String::from_utf8_lossy));
        a.opt_if("--wset", self.wset.map(|(n, x)| format!("{n},{x}")));
    }

    /// The offered load: arrivals (or stages), workload, length.
    fn load_args(&self, a: &mut Args) {
        if self.stages.is_empty() {
            if let Arrival::Open(d) = self.arrival {
                dist_args(d, a);
            }
            a.opt_if("--duration", self.duration);
        } else {
            let list: Vec<String> = self
                .stages
                .iter()
                .map(|s| match s.from == s.to {
                    true => format!("{}:{}", s.duration_s, s.from),
                    false => format!("{}:{}-{}", s.duration_s, s.from, s.to),
                })
                .collect();
            a.opt("--stages", list.join(","));
            if let Arrival::Open(Dist::Exponential(_)) = self.arrival {
                a.opt("--period", "e");
            }
        }
        self.workload_to_args(a);
        if self.warmup > 0.0 {
            a.opt("--warmup", self.warmup);
        }
        a.flag_if("--reconnect", self.reconnect);
        a.opt_if(
            "--probe",
            self.probe.map(|p| match p.conns {
                1 => format!("{}", p.rate),
                n => format!("{},{n}", p.rate),
            }),
        );
    }

    /// The workload's options.
    fn workload_to_args(&self, a: &mut Args) {
        match &self.workload {
            Workload::Requests {
                num_conns,
                num_calls,
                burst,
            } => {
                a.opt_if("--num-conns", *num_conns);
                if *num_calls != 1 {
                    a.opt("--num-calls", num_calls);
                }
                burst_arg(*burst, a);
            }
            Workload::Sessions {
                num_sessions,
                calls,
                burst,
                think,
            } => {
                let n = num_sessions.unwrap_or(0);
                a.opt("--wsess", format!("{n},{calls},{think}"));
                burst_arg(*burst, a);
            }
            Workload::SessionLog {
                num_sessions,
                think,
                file,
                ..
            } => {
                let n = num_sessions.unwrap_or(0);
                a.opt("--wsesslog", format!("{n},{think},{file}"));
            }
            Workload::Users {
                users,
                requests_per_user,
                think,
                burst,
                pace,
            } => {
                if let Some(d) = pace {
                    dist_args(*d, a);
                }
                a.opt("--users", users);
                a.opt_if("--requests-per-user", *requests_per_user);
                if *think > 0.0 {
                    a.opt("--think", think);
                }
                burst_arg(*burst, a);
                a.opt_if("--num-calls", self.calls_per_conn);
            }
        }
    }

    /// Timeouts, buffers, sessions' options, shards.
    fn connection_args(&self, a: &mut Args) {
        a.opt_if("--timeout", self.timeout);
        if self.think_timeout > 0.0 {
            a.opt("--think-timeout", self.think_timeout);
        }
        a.opt_if("--max-response-time", self.max_response_time);
        a.opt_if("--send-buffer", self.send_buffer);
        a.opt_if("--recv-buffer", self.recv_buffer);
        a.flag_if("--close-with-reset", self.close_with_reset);
        a.flag_if("--retry-on-failure", self.retry_on_failure);
        a.opt_if("--failure-status", self.failure_status);
        a.opt_if("--max-connections", self.max_connections);
        a.opt_if("--max-piped-calls", self.max_piped_calls);
        a.opt_if("--max-connecting", self.max_connecting);
        if self.client != (0, 1) {
            a.opt("--client", format!("{}/{}", self.client.0, self.client.1));
        }
        a.opt_if("--start-at", self.start_at);
        a.opt_if("--run-id", self.run_id.as_ref());
    }

    /// Printing, report and files.
    fn output_args(&self, a: &mut Args) {
        for (what, name) in [
            (self.print_reply, "--print-reply"),
            (self.print_request, "--print-request"),
        ] {
            match what {
                PrintWhat::None => {}
                PrintWhat::All => a.flag(name),
                PrintWhat::Header => a.flag(&format!("{name}=header")),
                PrintWhat::Body => a.flag(&format!("{name}=body")),
            }
        }
        a.flag_if("--verbose", self.verbose);
        if self.sample_interval != 1.0 {
            a.opt("--sample-interval", self.sample_interval);
        }
        if !self.label.is_empty() {
            a.opt("--label", &self.label);
        }
        a.opt_if("--json", self.json.as_deref().map(path));
        a.opt_if("--csv", self.csv.as_deref().map(path));
        a.opt_if("--latency-dump", self.raw_latencies.as_deref().map(path));
        a.flag_if("--quiet", self.quiet);
        a.flag_if("--no-progress", self.no_progress);
    }

    /// httplab's own options: seed, threads, sources, checks, calibration.
    fn extension_args(&self, a: &mut Args) {
        if self.seed != DEFAULT_SEED {
            a.opt("--seed", self.seed);
        }
        if self.threads != 1 {
            a.opt("--threads", self.threads);
        }
        if !self.local_addrs.is_empty() {
            let list: Vec<String> = self.local_addrs.iter().map(|ip| ip.to_string()).collect();
            a.opt("--local-addr", list.join(","));
        }
        a.opt_if("--verify-root", self.verify_root.as_deref().map(path));
        if self.lag_threshold != DEFAULT_LAG_THRESHOLD {
            a.opt("--lag-threshold", self.lag_threshold);
        }
        a.flag_if("--busy-poll", self.busy_poll);
        if self.io != crate::spec::IoEngine::Auto {
            a.opt("--io", self.io.name());
        }
        a.flag_if("--calibrate", self.calibrate);
        a.flag_if("--calibrate-only", self.calibrate_only);
        a.opt_if("--calibrate-size", self.calibrate_size);
        a.opt_if("--calibrate-conns", self.calibrate_conns);
        a.opt_if("--client-ceiling", self.client_ceiling);
    }

    /// `--http2` and `--http3` with their streams (and HTTP/2's windows
    /// when not the default).
    fn protocol_args(&self, a: &mut Args) {
        if let Some(h) = &self.http2 {
            a.flag("--http2");
            a.opt("--max-concurrent-streams", h.max_concurrent_streams);
            let d = Http2Spec::default();
            if h.stream_window != d.stream_window {
                a.opt("--h2-window", h.stream_window);
            }
            if h.conn_window != d.conn_window {
                a.opt("--h2-conn-window", h.conn_window);
            }
        }
        if let Some(h) = &self.http3 {
            a.flag("--http3");
            a.opt("--max-concurrent-streams", h.max_concurrent_streams);
        }
    }
}

/// TLS: `--ssl` unless the target is an `https://` URL, `--cacert`, and
/// the options that are not the default.
fn tls_args(t: &TlsSpec, url: bool, a: &mut Args) {
    if !url {
        a.flag("--ssl");
    }
    a.opt_if("--cacert", t.cacert.as_deref().map(path));
    if !t.reuse {
        a.flag("--ssl-no-reuse");
    }
    if !t.ciphers.is_empty() {
        a.opt("--ssl-ciphers", t.ciphers.join(":"));
    }
    match t.version {
        None => {}
        Some(TlsVersion::V1_2) => a.opt("--tls-version", "1.2"),
        Some(TlsVersion::V1_3) => a.opt("--tls-version", "1.3"),
    }
}

/// An open-loop schedule: `--rate R` where the rate gives back the same
/// period, else `--period` with the period itself.
fn dist_args(d: Dist, a: &mut Args) {
    match d {
        Dist::Deterministic(p) if 1.0 / (1.0 / p) == p => a.opt("--rate", 1.0 / p),
        Dist::Deterministic(p) => a.opt("--period", format!("d{p}")),
        Dist::Exponential(p) => a.opt("--period", format!("e{p}")),
        Dist::Uniform(lo, hi) => a.opt("--period", format!("u{lo},{hi}")),
    }
}

/// `--burst-length N` when calls are pipelined.
fn burst_arg(burst: u32, a: &mut Args) {
    if burst != 1 {
        a.opt("--burst-length", burst);
    }
}

/// `--series`, `--prometheus`, `--check-client` and the hidden step of a
/// client check.
fn live_args(l: &LiveSpec, a: &mut Args) {
    a.opt_if("--series", l.series.as_deref().map(path));
    a.opt_if("--prometheus", l.prometheus);
    a.flag_if("--check-client", l.check_client);
    if let Some(s) = l.step {
        a.flag(&format!(
            "--client-check-step={}/{}@{}",
            s.index, s.of, s.start_at
        ));
    }
}

#[cfg(test)]
mod tests;
