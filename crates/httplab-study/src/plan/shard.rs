//! `httplab study --client I/N`: a study whose every load run is shard I of
//! N (the same split as `httplab load --client I/N`, see
//! `docs/distributed.md`).
//!
//! A study adapts as it goes (repetitions stop once intervals are precise,
//! capacity searches pick their next rate from the last result), and shards
//! on different machines would adapt differently and stop lining up. So a
//! sharded study is fixed in advance: every cell runs exactly its fewest
//! repetitions, the round orders come from one seed all shards share
//! (`--seed`, else derived from the run id), and workloads whose next step
//! depends on a result (capacity searches) or that are one stream (one
//! connection after another) are refused. Every load run gets
//! `--client I/N` and a run id of its own, the same on every shard
//! ([`run_id_of`]), so the run files the study keeps (`runs/` in the report
//! directory, [`run_files`]) merge pairwise with `httplab merge`.

use anyhow::{bail, Result};
use httplab_model as m;

use crate::plan::steps::{steps_with, Offer};
use crate::spec::{StudyFile, WorkloadKind};

/// A study's shard: `--client I/N` and the run id shared by all N.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// This shard's index, 0 <= index < count.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
    /// The study's run id (`--run-id`, else [`derive_run_id`]).
    pub run_id: String,
}

/// Parses `I/N` (0 <= I < N).
pub fn parse_client(text: &str) -> Result<(u32, u32)> {
    let bad = || anyhow::anyhow!("bad --client '{text}': expected I/N with 0 <= I < N, e.g. 0/3");
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let i: u32 = i.trim().parse().map_err(|_| bad())?;
    let n: u32 = n.trim().parse().map_err(|_| bad())?;
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// 64-bit FNV-1a. Written here because the run id must be the same on every
/// shard, whatever Rust version built each machine's binary (std's hasher
/// makes no such promise), and it is six lines.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The run id every shard of `study` derives alike: `study-NAME-` and 16
/// hex digits of a hash of the study's name, servers, workloads, TLS,
/// protocol seed and shard count. Two sharded runs of the same study need
/// distinct `--run-id`s for `httplab merge` to tell them apart.
pub fn derive_run_id(study: &StudyFile, count: u32) -> String {
    let mut key = format!("{}|{count}|tls={}", study.name, study.tls);
    for s in crate::spec::expand_servers(study) {
        key.push('|');
        key.push_str(&s.name);
    }
    for w in &study.workloads {
        key.push('|');
        key.push_str(&w.name);
    }
    if let Some(seed) = study.protocol.seed {
        key.push_str(&format!("|seed={seed}"));
    }
    let name: String = sanitize(&study.name).chars().take(40).collect();
    format!("study-{name}-{:016x}", fnv1a(key.as_bytes()))
}

/// Fixes a study for sharding (see the module docs): fixed repetitions, a
/// shared seed; refuses workloads that cannot be split.
pub fn prepare(study: &mut StudyFile, shard: &Shard) -> Result<()> {
    let n = u64::from(shard.count);
    for w in &study.workloads {
        if w.kind == WorkloadKind::Sweep {
            bail!(
                "workload '{}' is a capacity search: each step's rate depends on the last result, \
                 so {} shards would search apart; run it unsharded",
                w.name,
                shard.count
            );
        }
        if w.slice_count() > 1 {
            bail!(
                "workload '{}' measures each round in {} slices: shards name their runs by round, \
                 so sliced rounds cannot be merged yet; leave `slices` out for a sharded run",
                w.name,
                w.slice_count()
            );
        }
        if w.kind == WorkloadKind::Idle && n > 1 {
            bail!(
                "workload '{}' holds idle connections from this machine: every shard would hold its own set, so the server would see {} times as many; run it unsharded",
                w.name,
                shard.count
            );
        }
        for p in steps_with(w, &study.protocol) {
            let step = if p.step.is_empty() {
                String::new()
            } else {
                format!(" [{}]", p.step)
            };
            match p.offer {
                Offer::Open { rate: None, .. } if n > 1 => bail!(
                    "workload '{}'{step}: connections one after another are one stream and cannot be \
                     split over {n} clients; give it a `rate`",
                    w.name
                ),
                Offer::Closed { users, .. } if users < n => bail!(
                    "workload '{}'{step}: {users} user(s) cannot be split over {n} clients \
                     (users go to shards u mod N); give it at least {n}",
                    w.name
                ),
                _ => {}
            }
        }
    }
    let min = study
        .protocol
        .min_repetitions
        .max(study.repetitions.unwrap_or(0));
    study.protocol.min_repetitions = min;
    study.protocol.max_repetitions = min;
    for w in &mut study.workloads {
        let fixed = w.repetitions.unwrap_or(min).max(2);
        w.repetitions = Some(fixed);
        w.max_repetitions = Some(fixed);
    }
    if study.protocol.seed.is_none() {
        study.protocol.seed = Some(fnv1a(shard.run_id.as_bytes()));
    }
    Ok(())
}

/// Longest study run id (`--run-id`): leaves room in a load run's id
/// (at most 128 characters) for the run's own part.
pub const MAX_RUN_ID: usize = 64;

/// Checks a `--run-id` for a study: 1 to [`MAX_RUN_ID`] characters of
/// A-Z a-z 0-9 - _ . (the characters `httplab load --run-id` takes, but `:`,
/// which separates the parts of each run's id).
pub fn check_run_id(id: &str) -> Result<()> {
    if id.is_empty()
        || id.len() > MAX_RUN_ID
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        bail!("--run-id '{id}' must be 1 to {MAX_RUN_ID} characters of A-Z a-z 0-9 - _ .");
    }
    Ok(())
}

/// The run id of one load run of a sharded study, the same on every shard:
/// `STUDY_ID:WORKLOAD:STEP:SERVER:rROUND` (names reduced to A-Z a-z 0-9 - _ .;
/// when that is longer than `httplab load` takes, the part after the study
/// id becomes a hash of it).
pub fn run_id_of(
    study_run_id: &str,
    workload: &str,
    step: Option<&str>,
    server: &str,
    round: u32,
) -> String {
    let tail = format!(
        "{}:{}:{}:r{round}",
        sanitize(workload),
        step.map_or_else(|| "-".to_string(), sanitize),
        sanitize(server)
    );
    let id = format!("{study_run_id}:{tail}");
    if id.len() <= 128 {
        id
    } else {
        format!("{study_run_id}:{:016x}", fnv1a(tail.as_bytes()))
    }
}

/// File name (under `runs/`) of one run of a sharded study:
/// `WORKLOAD.STEP.SERVER.rROUND.shard-I.json`, so the files of every shard
/// can be copied into one directory and merged by a glob.
pub fn run_file_name(r: &m::StudyRun, shard: &Shard) -> String {
    format!(
        "{}.{}.{}.r{}.shard-{}.json",
        sanitize(&r.workload),
        r.step.as_deref().map_or_else(|| "-".to_string(), sanitize),
        sanitize(&r.server),
        r.repetition,
        shard.index
    )
}

/// The run documents of a sharded study, for `httplab merge`: (file name,
/// run) for every run that produced a result.
pub fn run_files<'a>(res: &'a m::StudyResult, shard: &Shard) -> Vec<(String, &'a m::RunResult)> {
    res.runs
        .iter()
        .filter_map(|r| r.run.as_ref().map(|run| (run_file_name(r, shard), run)))
        .collect()
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study(extra: &str) -> StudyFile {
        crate::spec::parse(
            &format!(
                "name = \"s\"\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 10 }}]\n[[servers]]\nkind = \"nginx\"\n{extra}"
            ),
            "s.toml",
        )
        .unwrap()
    }

    #[test]
    fn client_parsing() {
        assert_eq!(parse_client("0/3").unwrap(), (0, 3));
        assert_eq!(parse_client("2/3").unwrap(), (2, 3));
        for bad in ["3/3", "1/0", "x/2", "1", "-1/2", ""] {
            assert!(parse_client(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fixed_protocol_and_shared_seed() {
        let mut s = study(
            "[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\nrate = 100\nmax_repetitions = 9\n",
        );
        let id = derive_run_id(&s, 2);
        assert_eq!(id, derive_run_id(&s.clone(), 2), "deterministic");
        assert_ne!(id, derive_run_id(&s, 3), "the shard count is part of it");
        let shard = Shard {
            index: 1,
            count: 2,
            run_id: id,
        };
        prepare(&mut s, &shard).unwrap();
        assert_eq!(s.protocol.min_repetitions, s.protocol.max_repetitions);
        assert_eq!(s.workloads[0].max_repetitions, Some(3));
        assert!(s.protocol.seed.is_some());
        assert_eq!(
            run_id_of("R", "w", None, "apache event", 2),
            "R:w:-:apache_event:r2",
            "no shard index in a run id"
        );
        let long = run_id_of("R", &"w".repeat(200), Some("set:x"), "s", 0);
        assert!(long.len() <= 128 && long.starts_with("R:"), "{long}");
        check_run_id(&derive_run_id(&s, 2)).unwrap();
        assert!(check_run_id("a:b").is_err() && check_run_id("").is_err());
    }

    #[test]
    fn refuses_what_cannot_be_split() {
        let shard = Shard {
            index: 0,
            count: 2,
            run_id: "r".into(),
        };
        let mut sweep = study(
            "[[workloads]]\nname = \"w\"\nkind = \"sweep\"\ntarget = \"/a.txt\"\nlow_rate = 10\n",
        );
        assert!(prepare(&mut sweep, &shard)
            .unwrap_err()
            .to_string()
            .contains("capacity search"));
        let mut seq = study("[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n");
        assert!(prepare(&mut seq, &shard)
            .unwrap_err()
            .to_string()
            .contains("one stream"));
        let mut one = study(
            "[[workloads]]\nname = \"w\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 1\n",
        );
        assert!(prepare(&mut one, &shard)
            .unwrap_err()
            .to_string()
            .contains("at least 2"));
        let mut two = study(
            "[[workloads]]\nname = \"w\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\n",
        );
        prepare(&mut two, &shard).unwrap();
    }
}
