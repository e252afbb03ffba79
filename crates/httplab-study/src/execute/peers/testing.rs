//! What the peers' unit tests share: a server from a line of study file,
//! a study context with fixed paths, its launch plan, a file of the plan.

use super::{plan, Context, LaunchPlan, Unavailable};
use crate::execute::tls::CertFiles;
use crate::spec::{expand_servers, parse, ServerInstance};

/// The first server of a study whose `[[servers]]` entry is `server_toml`.
pub fn inst(server_toml: &str) -> ServerInstance {
    let text = format!(
        "name = \"t\"\n[[servers]]\n{server_toml}\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a\"\n"
    );
    let s = parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e:#}"));
    expand_servers(&s).remove(0)
}

/// A study context under /srv, over TLS or not, with HTTP/2 or not.
pub fn ctx(tls: bool, http2: bool) -> Context {
    Context {
        root: "/srv/root".into(),
        work: "/srv/work".into(),
        httplab_exe: Some("/bin/httplab".into()),
        probe_path: "/a".into(),
        tls: tls.then(|| CertFiles {
            cert: "/srv/tls/cert.pem".into(),
            key: "/srv/tls/key.pem".into(),
        }),
        http2,
        http3: tls,
    }
}

/// The plan of `server_toml` on port 8443, or None (a visible skip; a
/// failure under CI) when its program is not installed here.
pub fn plan_of(server_toml: &str, tls: bool, http2: bool) -> Option<LaunchPlan> {
    match plan(&inst(server_toml), &ctx(tls, http2), 8443) {
        Ok(p) => Some(p),
        Err(Unavailable::NotInstalled { package }) => {
            assert!(
                !httplab_skip::under_ci(),
                "{package} not installed under CI"
            );
            httplab_skip::skipped(&format!("{package}: not installed"));
            None
        }
        Err(u) => panic!("{}", u.reason()),
    }
}

/// The text of the plan's file `name`.
pub fn file<'a>(p: &'a LaunchPlan, name: &str) -> &'a str {
    p.files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.as_str())
        .unwrap_or_else(|| panic!("no {name} in {:?}", p.files))
}
