//! The lost-update property across machines (team memory): sessions spread
//! over three daemons with their own data dirs do random read-modify-write
//! cycles on a few hot shared rows, plus appends, for a bounded time
//! (`MEMD_TEAM_SECS`, 4 s by default). Every acknowledged update must have
//! been applied right over the version its session last read (zero lost),
//! appends are never refused, and at the end the three local databases and
//! PostgreSQL hold the same rows.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use memd_client::proto::{AddRequest, ChangeKind, DriftRule, UpdateRequest};
use memd_client::{Client, ConnectOptions, Error};

use crate::common::Daemon;
use crate::common::pg::{Bouncer, Pg};

const NS: &str = "team-hot";
const MACHINES: usize = 3;
const SESSIONS_PER_MACHINE: usize = 3;
const HOT: usize = 4;

fn run_time() -> Duration {
    let secs = std::env::var("MEMD_TEAM_SECS").ok().map_or(4, |v| {
        v.parse().expect("MEMD_TEAM_SECS is a number of seconds")
    });
    Duration::from_secs(secs)
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

struct Acked {
    uid: String,
    read_rev: i64,
    read_content: String,
    new_rev: i64,
    new_content: String,
}

#[derive(Default)]
struct Tally {
    acked: Vec<Acked>,
    refused: u64,
    appends: u64,
}

fn opts(d: &Daemon) -> ConnectOptions {
    let mut o = d.opts();
    o.namespace = NS.into();
    o
}

/// One session's load: `hot` maps each hot row's uid to its local id on
/// the session's machine.
async fn session(opts: ConnectOptions, n: usize, hot: Vec<(String, i64)>, stop: Instant) -> Tally {
    let mut c = Client::connect(opts).await.unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (n as u64 + 1));
    let mut t = Tally::default();
    let mut k = 0;
    while Instant::now() < stop {
        k += 1;
        if rng.below(4) == 0 {
            let text = format!("session {n} appends note {k}");
            let r = c
                .add(AddRequest {
                    content: text,
                    ..AddRequest::default()
                })
                .await
                .unwrap_or_else(|e| panic!("an append was refused: {e}"));
            assert!(r.accepted && !r.deduped);
            t.appends += 1;
            continue;
        }
        let (uid, id) = hot[rng.below(hot.len() as u64) as usize].clone();
        let read = c.get(id).await.unwrap();
        tokio::time::sleep(Duration::from_micros(rng.below(3000))).await;
        let new_content = format!("hot {uid} by s{n}.{k} over {:016x}", fnv(&read.content));
        let req = UpdateRequest {
            id,
            content: Some(new_content.clone()),
            ..UpdateRequest::default()
        };
        match c.update(req).await {
            Ok(r) => t.acked.push(Acked {
                uid,
                read_rev: read.rev,
                read_content: read.content,
                new_rev: r.memory.rev,
                new_content,
            }),
            Err(Error::Drift(body)) => {
                let drift = body.drift.unwrap();
                assert_eq!(drift.rule, DriftRule::Row, "{}", body.message);
                let row = drift.row.unwrap();
                assert!(row.rev_now > read.rev, "{}", body.message);
                assert_eq!(row.changed_by.kind, ChangeKind::Session, "{}", body.message);
                t.refused += 1;
            }
            // The row kept moving in PostgreSQL while this write was
            // decided twice: refused, nothing written.
            Err(Error::Conflict(_)) => t.refused += 1,
            Err(e) => panic!("update: {e}"),
        }
    }
    t
}

/// `uid|rev|content` of every row of the namespace, sorted.
fn local_rows(d: &Daemon) -> Vec<String> {
    let out = crate::common::sqlite3(
        &d.db(),
        &format!("SELECT uid, rev, content FROM memories WHERE namespace = '{NS}' ORDER BY uid"),
    );
    out.lines().map(str::to_string).collect()
}

fn pg_rows(pg: &Pg) -> Vec<String> {
    let out = pg.psql(&format!(
        "SELECT uid, rev, content FROM memd.memories WHERE namespace = '{NS}' AND NOT deleted \
         ORDER BY uid"
    ));
    out.lines().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_update_is_lost_across_machines() {
    lost_updates(Through::Direct).await;
}

/// The same through PgBouncer in transaction mode: the machines log in as
/// one role, whose writes share one server connection, transaction by
/// transaction (a statement named on one machine's transaction would meet
/// another's); the pull listens on a direct connection (`listen_url`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_update_is_lost_through_a_pooler_in_transaction_mode() {
    lost_updates(Through::Pooler).await;
}

/// The same with everything through the pooler, the pull too: its `LISTEN`
/// carries nothing there, so it finds commits by polling; every statement
/// it runs is unnamed (a named one failed with 42P05 as soon as two
/// machines' pulls shared a server connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_update_is_lost_with_the_pull_polling_through_a_pooler() {
    lost_updates(Through::PoolerAlone).await;
}

/// How the machines reach PostgreSQL.
#[derive(Clone, Copy, PartialEq)]
enum Through {
    /// Directly.
    Direct,
    /// Writes through PgBouncer, the pull direct (`listen_url`).
    Pooler,
    /// Everything through PgBouncer.
    PoolerAlone,
}

async fn lost_updates(through: Through) {
    let pooled = through != Through::Direct;
    if !crate::common::tool("sqlite3", "reads each machine's database") {
        return;
    }
    let Some(pg) = Pg::start() else { return };
    // Each machine its own role, or one for all through the pooler.
    let role = |m: usize| {
        if pooled {
            "team".to_string()
        } else {
            format!("m{m}")
        }
    };
    let bouncer = if pooled {
        // One server connection for the writes (they share it, transaction
        // by transaction); three when the pulls come through too, so a
        // pull's statements may land on different server connections.
        let pool = if through == Through::PoolerAlone {
            3
        } else {
            1
        };
        let Some(b) = Bouncer::start(&pg, &["team", "watcher"], pool) else {
            return;
        };
        Some(b)
    } else {
        None
    };
    let boot = Daemon::prepare(tempfile::tempdir().unwrap());
    let out = crate::common::memd_command(boot.dir.path())
        .args(["team", "init"])
        .env("MEMD_TEAM_URL", pg.url())
        .output()
        .unwrap();
    assert!(out.status.success());
    // With grants in place: each machine's login role with write on the
    // namespaces (none above row-level security), and a watcher that may
    // only read.
    let mut writers: Vec<String> = (0..MACHINES).map(role).collect();
    writers.dedup();
    for r in &writers {
        pg.psql(&format!(
            "CREATE ROLE {r} LOGIN; \
             INSERT INTO memd.grants (role, glob, access) VALUES ('{r}', 'team-*', 'write')"
        ));
    }
    pg.psql(
        "CREATE ROLE watcher LOGIN; \
         INSERT INTO memd.grants (role, glob, access) VALUES ('watcher', 'team-*', 'read')",
    );
    let direct = |role: &str| pg.url().replace("user=postgres", &format!("user={role}"));
    // Writes through the pooler when there is one; the pull direct, unless
    // everything goes through the pooler.
    let urls = |role: &str| match &bouncer {
        Some(b) if through == Through::PoolerAlone => format!("url = \"{}\"\n", b.url(role)),
        Some(b) => format!(
            "url = \"{}\"\nlisten_url = \"{}\"\n",
            b.url(role),
            direct(role)
        ),
        None => format!("url = \"{}\"\n", direct(role)),
    };
    let machines: Vec<Daemon> = (0..MACHINES)
        .map(|m| {
            Daemon::with_config(&format!(
                "[team]\n{}namespaces = [\"team-*\"]\nmachine = \"m{m}\"\n\
                 [drift]\nread_set_rows = 64\n",
                urls(&role(m))
            ))
        })
        .collect();
    let watcher = Daemon::with_config(&format!(
        "[team]\n{}namespaces = [\"team-*\"]\nmachine = \"watcher\"\n",
        urls("watcher")
    ));
    // Seed the hot rows on the first machine; every machine gets them.
    let mut seed = Client::connect(opts(&machines[0])).await.unwrap();
    let mut uids = Vec::new();
    for i in 0..HOT {
        let id = seed
            .add(AddRequest {
                content: format!("hot row {i}"),
                ..AddRequest::default()
            })
            .await
            .unwrap()
            .id
            .unwrap();
        uids.push(seed.get(id).await.unwrap().uid);
    }
    let mut hot_ids: Vec<Vec<(String, i64)>> = Vec::new();
    for d in &machines {
        let mut c = Client::connect(opts(d)).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        let ids = loop {
            let list = c
                .list(memd_client::proto::ListRequest {
                    filter: memd_client::proto::Filter::default(),
                    limit: 100,
                    offset: 0,
                })
                .await
                .unwrap();
            let found: Vec<(String, i64)> = uids
                .iter()
                .filter_map(|u| {
                    list.memories
                        .iter()
                        .find(|m| &m.uid == u)
                        .map(|m| (u.clone(), m.id))
                })
                .collect();
            if found.len() == HOT {
                break found;
            }
            assert!(
                Instant::now() < deadline,
                "the hot rows did not reach a machine"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        hot_ids.push(ids);
    }

    let started = Instant::now();
    let stop = started + run_time();
    let mut tasks = Vec::new();
    for (m, d) in machines.iter().enumerate() {
        for s in 0..SESSIONS_PER_MACHINE {
            let n = m * SESSIONS_PER_MACHINE + s;
            tasks.push(tokio::spawn(session(opts(d), n, hot_ids[m].clone(), stop)));
        }
    }
    let mut all = Tally::default();
    for t in tasks {
        let t = t.await.unwrap();
        all.acked.extend(t.acked);
        all.refused += t.refused;
        all.appends += t.appends;
    }
    let elapsed = started.elapsed();

    // Every machine converges to PostgreSQL's rows.
    let want = pg_rows(&pg);
    for d in machines.iter().chain([&watcher]) {
        Pg::wait_for(Duration::from_secs(20), "a machine to converge", || {
            local_rows(d) == want
        });
    }
    // PostgreSQL names each writer's own role on what it wrote.
    let role_of_machine = if pooled { "'team'" } else { "changed_machine" };
    assert_eq!(
        pg.psql(&format!(
            "SELECT count(*) FROM memd.memories \
             WHERE changed_role IS DISTINCT FROM {role_of_machine}"
        )),
        "0",
        "every row's role is its machine's"
    );
    assert_eq!(
        want.len(),
        HOT + all.appends as usize,
        "every append is there once"
    );

    // Each acknowledged update made the very next version of what it read,
    // and the history of every hot row is that chain.
    let mut by_uid: HashMap<&str, Vec<&Acked>> = HashMap::new();
    for a in &all.acked {
        assert_eq!(
            a.new_rev,
            a.read_rev + 1,
            "{}: an update based on rev {} became rev {}: a version in between was lost",
            a.uid,
            a.read_rev,
            a.new_rev
        );
        by_uid.entry(a.uid.as_str()).or_default().push(a);
    }
    for uid in &uids {
        let mut versions: HashMap<i64, String> = HashMap::new();
        for line in pg
            .psql(&format!(
                "SELECT rev, content FROM memd.revisions WHERE uid = '{uid}' \
                 UNION ALL SELECT rev, content FROM memd.memories WHERE uid = '{uid}'"
            ))
            .lines()
        {
            let (rev, content) = line.split_once('|').unwrap();
            versions.insert(rev.parse().unwrap(), content.to_string());
        }
        let current = *versions.keys().max().unwrap();
        assert_eq!(
            versions.len() as i64,
            current,
            "one version per rev of {uid}"
        );
        let acked = by_uid
            .get(uid.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        assert_eq!(
            acked.len() as i64,
            current - 1,
            "every change of {uid} is an acknowledged update"
        );
        for a in acked {
            assert_eq!(versions[&a.read_rev], a.read_content);
            assert_eq!(versions[&a.new_rev], a.new_content);
        }
        for rev in 2..=current {
            let over = format!("over {:016x}", fnv(&versions[&(rev - 1)]));
            assert!(
                versions[&rev].ends_with(&over),
                "{uid} rev {rev} was not written over rev {}",
                rev - 1
            );
        }
    }
    eprintln!(
        "team lost-update property{}: {} sessions on {MACHINES} machines, {HOT} hot rows, {:.1} s: \
         {} acknowledged read-modify-write updates, {} refused, {} appends (0 refused), 0 lost, \
         {} rows alike on every machine and in PostgreSQL",
        match through {
            Through::Direct => "",
            Through::Pooler => " through PgBouncer",
            Through::PoolerAlone => " through PgBouncer, the pull polling",
        },
        MACHINES * SESSIONS_PER_MACHINE,
        elapsed.as_secs_f64(),
        all.acked.len(),
        all.refused,
        all.appends,
        want.len()
    );
    // No statement of one machine met another's on a shared server
    // connection (PostgreSQL's 42P05 / 26000), in a write or in a pull.
    for d in machines.iter().chain([&watcher]) {
        let log = d.log();
        assert!(
            !log.contains("prepared statement"),
            "a named statement crossed machines:\n{log}"
        );
    }
    if let Some(b) = &bouncer {
        // The machines' writes came through the pooler, as their roles.
        let log = b.log();
        let logins = log.matches("login attempt: db=postgres user=team").count();
        assert!(
            logins >= MACHINES,
            "{logins} writers logged in through PgBouncer:\n{log}"
        );
    }
    assert!(
        all.acked.len() > 10,
        "too few updates: the run proved nothing"
    );
    assert!(
        all.refused > 0,
        "no conflict happened: the run proved nothing"
    );
}
