//! Any command of the user's (`kind = "command"`): its argv and environment
//! with `{port}`, `{root}`, `{dir}`, `{workers}`, `{cert}`, `{key}` and
//! `{scheme}` filled in, run where `httplab study` was started. It is taken
//! at its word for the protocols it speaks.

use std::path::Path;

use super::kind::{first_line_of, which, Inputs, Peer, PeerBinary};
use super::launch::{Context, LaunchPlan, Unavailable};
use crate::spec::ServerInstance;

/// A command server (`kind = "command"`).
pub struct UserCommand;

impl Peer for UserCommand {
    fn binary(&self) -> Option<PeerBinary> {
        None
    }

    /// Its command line and environment, `{port}`, `{root}` … filled in.
    fn plan(&self, i: Inputs, p: &mut LaunchPlan) -> Result<(), Unavailable> {
        let Inputs {
            inst,
            sv,
            ctx,
            port,
            ..
        } = i;
        let w = inst.workers.unwrap_or(1);
        p.argv = sv.command.iter().map(|a| subst(a, port, ctx, w)).collect();
        p.env = sv
            .env
            .iter()
            .map(|(k, v)| (k.clone(), subst(v, port, ctx, w)))
            .collect();
        p.cwd = std::env::current_dir().ok();
        let Some(prog) = p.argv.first() else {
            return Err(Unavailable::Other("empty command".into()));
        };
        if which(prog).is_none() {
            return Err(Unavailable::Other(format!("command '{prog}' not found")));
        }
        Ok(())
    }

    fn error_log(&self) -> Option<&'static str> {
        None
    }

    fn h2(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
    }

    fn h3(&self, _inst: &ServerInstance) -> Result<(), String> {
        Ok(())
    }

    fn checked_by_starting(&self) -> bool {
        true
    }

    /// The first line its `version_command` prints.
    fn version(&self, inst: &ServerInstance, _httplab_exe: Option<&Path>) -> Option<String> {
        let (first, rest) = inst.spec.version_command.split_first()?;
        first_line_of(first, rest)
    }
}

fn subst(s: &str, port: u16, ctx: &Context, workers: u32) -> String {
    let (cert, key) = match &ctx.tls {
        Some(t) => (
            t.cert.to_string_lossy().into_owned(),
            t.key.to_string_lossy().into_owned(),
        ),
        None => (String::new(), String::new()),
    };
    s.replace("{port}", &port.to_string())
        .replace("{root}", &ctx.root.to_string_lossy())
        .replace("{dir}", &ctx.work.to_string_lossy())
        .replace("{workers}", &workers.to_string())
        .replace("{cert}", &cert)
        .replace("{key}", &key)
        .replace("{scheme}", if ctx.tls.is_some() { "https" } else { "http" })
}

#[cfg(test)]
mod tests {
    use crate::execute::peers::plan;
    use crate::execute::peers::testing::{ctx, inst, plan_of};

    #[test]
    fn placeholders_are_filled_in_argv_and_env() {
        let p = plan_of(
            "kind = \"command\"\ncommand = [\"sh\", \"-c\", \"{scheme}://127.0.0.1:{port} {root} {dir} {workers} {cert} {key}\"]\nenv = { PORT = \"{port}\" }\nworkers = 3",
            true,
            false,
        )
        .expect("a command server needs no package");
        assert_eq!(
            p.argv,
            [
                "sh".to_string(),
                "-c".into(),
                "https://127.0.0.1:8443 /srv/root /srv/work 3 /srv/tls/cert.pem /srv/tls/key.pem"
                    .into()
            ]
        );
        assert_eq!(p.env, [("PORT".to_string(), "8443".to_string())]);
        assert_eq!(p.error_log, None);
        assert_eq!(p.cwd, std::env::current_dir().ok());
        let why = plan(
            &inst("kind = \"command\"\ncommand = [\"no-such-program-of-httplab\"]"),
            &ctx(false, false),
            1,
        )
        .expect_err("not on $PATH");
        assert_eq!(
            why.reason(),
            "command 'no-such-program-of-httplab' not found"
        );
    }
}
