//! JsonNetworkList: the conformance suite, corrupt files, the index,
//! conflicts between processes and kill -9 during saves.
//!
//! Child processes are this test binary run again with `LC_LIST_CHILD`
//! set: the `list_json::child_main` test then plays the child's part.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use lc_agent::RunnableNetwork;
use lc_agent::{
    Attachments, JsonNetworkList, ListError, ListQuery, NetworkList, Saving, REVISION_KEY,
};
use serde_json::json;
use uuid::Uuid;

use crate::conformance;

#[tokio::test]
async fn conformance_suite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list = JsonNetworkList::new(dir.path());
    let other = list.with_user("someone-else").expect("user");
    conformance::run_all(&list, &other).await;
}

#[tokio::test]
async fn layout_and_default_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list = JsonNetworkList::new(dir.path())
        .with_user("alice")
        .expect("user");
    let net = RunnableNetwork::builder().name("n").build();
    list.save(&net).await.expect("save");
    let file = dir.path().join("alice").join(format!("{}.json", net.id()));
    assert_eq!(list.path_of(net.id()), file);
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        net.to_json().expect("json")
    );
    assert!(dir.path().join("alice").join(".index.jsonl").exists());
    // No temporary file is left behind by a successful save.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("alice"))
        .expect("dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    assert!(matches!(
        list.with_user("a/b"),
        Err(ListError::InvalidUser(_))
    ));
    assert!(matches!(
        list.with_user(".hidden"),
        Err(ListError::InvalidUser(_))
    ));
    assert!(matches!(list.with_user(""), Err(ListError::InvalidUser(_))));
    // `$LC_AGENT_HOME/sessions` (set only in a child to keep tests independent).
    let out = Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--exact",
            "list_json::child_main",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LC_LIST_CHILD", "default-root")
        .env("LC_AGENT_HOME", dir.path())
        .output()
        .expect("child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let expected = dir.path().join("sessions").display().to_string();
    assert!(
        stdout
            .lines()
            .any(|l| marked(l, "ROOT ") == Some(&expected)),
        "{stdout}"
    );
}

/// Damages a session file: cuts it in half.
fn damage(path: &Path) {
    let text = std::fs::read(path).expect("read");
    std::fs::write(path, &text[..text.len() / 2]).expect("write");
}

#[tokio::test]
async fn corrupt_files_are_reported_and_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list = JsonNetworkList::new(dir.path());
    let (good, _) = conformance::conversation("good").await;
    let (bad, _) = conformance::conversation("bad").await;
    list.save(&good).await.expect("save");
    list.save(&bad).await.expect("save");
    // Warm up the listing cache, then damage a file behind its back and
    // drop a garbage file the index never saw.
    assert_eq!(
        list.list(&ListQuery::default()).await.expect("list").total,
        2
    );
    let bad_path = list.path_of(bad.id());
    damage(&bad_path);
    let stray = Uuid::new_v4();
    let stray_path = dir.path().join("default").join(format!("{stray}.json"));
    std::fs::write(&stray_path, b"{\"format\": \"lc-agent/1\", \"id\": ").expect("write");

    // Warm instance: the page check re-reads the changed file.
    let page = list.list(&ListQuery::default()).await.expect("list");
    assert_eq!(
        page.sessions.iter().map(|s| s.id).collect::<Vec<_>>(),
        [good.id()]
    );
    assert_corrupt(&page.errors, &[&bad_path]);

    // Cold instance (another process): reconciles with the directory too.
    let cold = JsonNetworkList::new(dir.path());
    let page = cold.list(&ListQuery::default()).await.expect("list");
    assert_eq!(
        page.sessions.iter().map(|s| s.id).collect::<Vec<_>>(),
        [good.id()]
    );
    assert_corrupt(&page.errors, &[&bad_path, &stray_path]);

    // load names the file; load_all reports it and loads the rest.
    match cold.load(bad.id()).await {
        Err(ListError::Corrupt { location, id, .. }) => {
            assert_eq!(location, bad_path.display().to_string());
            assert_eq!(id, Some(bad.id()));
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let all = cold.load_all().await.expect("load_all");
    assert_eq!(all.len(), 3);
    let ok: Vec<_> = all.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0].id(), good.id());
    assert_eq!(
        all.iter()
            .filter(|r| matches!(r, Err(ListError::Corrupt { .. })))
            .count(),
        2
    );

    // Saving over a corrupt file works and keeps the damaged one aside.
    cold.save_force(&bad).await.expect("save over corrupt");
    assert_eq!(
        cold.load(bad.id())
            .await
            .expect("load")
            .to_json()
            .expect("json"),
        bad.to_json().expect("json")
    );
    let aside = std::fs::read_dir(dir.path().join("default"))
        .expect("dir")
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{}.json.corrupt-", bad.id()))
        })
        .count();
    assert_eq!(aside, 1);
    let page = cold.list(&ListQuery::default()).await.expect("list");
    assert_eq!(page.total, 2);
    assert_corrupt(&page.errors, &[&stray_path]);
}

fn assert_corrupt(errors: &[ListError], paths: &[&Path]) {
    let mut locations: Vec<String> = errors
        .iter()
        .map(|e| match e {
            ListError::Corrupt { location, .. } => location.clone(),
            other => panic!("expected Corrupt, got {other:?}"),
        })
        .collect();
    let mut want: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    locations.sort();
    want.sort();
    assert_eq!(locations, want);
}

#[tokio::test]
async fn index_is_rebuildable_and_never_the_only_copy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list = JsonNetworkList::new(dir.path());
    let mut ids = Vec::new();
    for i in 0..5 {
        let net = RunnableNetwork::builder().name(format!("n{i}")).build();
        list.save(&net).await.expect("save");
        ids.push(net.id());
    }
    let user_dir = dir.path().join("default");
    // A damaged line is skipped.
    std::fs::OpenOptions::new()
        .append(true)
        .open(user_dir.join(".index.jsonl"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{not json\n"))
        .expect("append");
    let page = JsonNetworkList::new(dir.path())
        .list(&ListQuery::default())
        .await
        .expect("list");
    assert_eq!(page.total, 5);
    assert!(page.errors.is_empty());
    // The index deleted: the next listing rebuilds it from the files.
    std::fs::remove_file(user_dir.join(".index.jsonl")).expect("rm");
    let fresh = JsonNetworkList::new(dir.path());
    let page = fresh.list(&ListQuery::default()).await.expect("list");
    let names: Vec<_> = page.sessions.iter().map(|s| s.name.clone()).collect();
    assert_eq!(names, ["n4", "n3", "n2", "n1", "n0"]);
    // A file copied in by hand shows up in a new process's listing.
    let copied = RunnableNetwork::builder().name("copied").build();
    copied
        .save_to_file(user_dir.join(format!("{}.json", copied.id())))
        .expect("copy");
    let page = JsonNetworkList::new(dir.path())
        .list(&ListQuery::default())
        .await
        .expect("list");
    assert_eq!(page.total, 6);
    // A file removed by hand disappears.
    std::fs::remove_file(user_dir.join(format!("{}.json", ids[0]))).expect("rm");
    let page = JsonNetworkList::new(dir.path())
        .list(&ListQuery::default())
        .await
        .expect("list");
    assert_eq!(page.total, 5);
    assert_eq!(fresh.rebuild_index().await.expect("rebuild"), 5);
    assert_eq!(
        fresh.list(&ListQuery::default()).await.expect("list").total,
        5
    );
}

#[tokio::test]
async fn many_saves_compact_the_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list = JsonNetworkList::new(dir.path());
    let net = RunnableNetwork::builder().name("busy").build();
    // ~2.3 KB per index line: about 1800 saves cross the 4 MiB mark, where
    // the index is compacted to one line; 200 more lines follow.
    net.set_metadata("blob", json!("x".repeat(2000)));
    for _ in 0..2000 {
        list.save(&net).await.expect("save");
    }
    let size = std::fs::metadata(dir.path().join("default").join(".index.jsonl"))
        .expect("index")
        .len();
    assert!(size < 1 << 20, "index not compacted: {size} bytes");
    let page = list.list(&ListQuery::default()).await.expect("list");
    assert_eq!(page.total, 1);
    assert_eq!(page.sessions[0].revision, 2000);
}

/// The text after `marker` in a child's output line (the test harness may
/// print `test list_json::child_main ... ` before the child's first line).
fn marked<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|at| &line[at + marker.len()..])
}

fn spawn_child(mode: &str, envs: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().expect("exe"));
    cmd.args([
        "--exact",
        "list_json::child_main",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("LC_LIST_CHILD", mode)
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn child")
}

/// Two processes update one shared session (load, change, save, retry on
/// conflict) and each its own session, at the same time, in one directory.
#[tokio::test]
async fn two_writer_processes_lose_no_update() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list = JsonNetworkList::new(dir.path());
    let shared = RunnableNetwork::builder().name("shared").build();
    shared.set_metadata("log", json!([]));
    list.save(&shared).await.expect("save");
    let rounds = 40;
    let children: Vec<(String, Child)> = ["left", "right"]
        .iter()
        .map(|tag| {
            let child = spawn_child(
                "writer",
                &[
                    ("ROOT", dir.path().display().to_string()),
                    ("SHARED", shared.id().to_string()),
                    ("TAG", tag.to_string()),
                    ("ROUNDS", rounds.to_string()),
                ],
            );
            (tag.to_string(), child)
        })
        .collect();
    let mut own = Vec::new();
    let mut conflicts = 0;
    for (tag, child) in children {
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success(), "{tag} failed");
        let stdout = String::from_utf8_lossy(&out.stdout);
        for line in stdout.lines() {
            if let Some(id) = marked(line, "OWN ") {
                own.push(Uuid::parse_str(id).expect("uuid"));
            }
            if let Some(n) = marked(line, "CONFLICTS ") {
                conflicts += n.parse::<usize>().expect("n");
            }
        }
    }
    let stored = list.load(shared.id()).await.expect("load");
    let log = stored.metadata_value("log").expect("log");
    let log: Vec<String> = serde_json::from_value(log).expect("strings");
    assert_eq!(log.len(), 2 * rounds, "an update was lost");
    for tag in ["left", "right"] {
        let mine: Vec<_> = log.iter().filter(|e| e.starts_with(tag)).cloned().collect();
        let want: Vec<_> = (0..rounds).map(|i| format!("{tag}-{i}")).collect();
        assert_eq!(mine, want);
    }
    assert_eq!(
        stored.metadata_value(REVISION_KEY),
        Some(json!(1 + 2 * rounds as u64))
    );
    assert_eq!(own.len(), 2);
    for id in own {
        let net = list.load(id).await.expect("own session");
        assert_eq!(net.metadata_value(REVISION_KEY), Some(json!(rounds as u64)));
    }
    let page = list.list(&ListQuery::default()).await.expect("list");
    assert_eq!(page.total, 3);
    println!("two writers: {conflicts} conflicts detected and retried");
}

/// A child saves a ~300 KB network in a loop and is killed with SIGKILL
/// at a different moment each time: the file left must load and be the
/// last acknowledged version or the one after it.
#[tokio::test]
async fn kill_9_during_saves_leaves_old_or_new_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let list = JsonNetworkList::new(dir.path());
    let id = Uuid::new_v4();
    let mut seen_mid = 0;
    for round in 0..12u64 {
        let mut child = spawn_child(
            "saver",
            &[
                ("ROOT", dir.path().display().to_string()),
                ("ID", id.to_string()),
            ],
        );
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let target = 1 + round % 4;
        let mut acked = list.stored_revision(id).await.expect("rev").unwrap_or(0);
        let mut count = 0;
        while let Some(Ok(line)) = lines.next() {
            if let Some(rev) = marked(&line, "SAVED ") {
                acked = rev.parse().expect("rev");
                count += 1;
                if count >= target {
                    break;
                }
            }
        }
        // A different instant inside the next save each round.
        std::thread::sleep(Duration::from_micros(700 * round));
        child.kill().expect("kill");
        child.wait().expect("wait");
        // Saves acknowledged before the kill, still in the pipe (a save can
        // take less than the sleep).
        for line in lines.map_while(Result::ok) {
            if let Some(rev) = marked(&line, "SAVED ") {
                acked = rev.parse().expect("rev");
            }
        }
        let net = list
            .load(id)
            .await
            .expect("file left by a killed save must load");
        let rev = net
            .metadata_value(REVISION_KEY)
            .and_then(|v| v.as_u64())
            .expect("rev");
        assert!(
            rev == acked || rev == acked + 1,
            "revision {rev} after ack {acked}"
        );
        assert_eq!(net.metadata_value("seq"), Some(json!(rev)));
        if rev == acked + 1 {
            seen_mid += 1;
        }
        let page = list.list(&ListQuery::default()).await.expect("list");
        assert_eq!(page.total, 1);
        assert!(page.errors.is_empty(), "{:?}", page.errors);
    }
    println!(
        "kill -9 during saves: {seen_mid}/12 kills landed after an unacknowledged save completed"
    );
}

/// kill -9 of a child making incremental saves of a growing chat (one
/// turn, then a save, in a loop), 20 times at different moments: the
/// session `make_list` opens loads whole, at the last acknowledged turn or
/// the one after it. `envs` tell the child which store to use (`REDIS`,
/// else `ROOT`). `settle` runs once the child is reaped: a store whose
/// server may still hold the dead child's last request (Redis executes
/// what a client sent before it died) makes sure it never runs later, so
/// the two loads below see one state.
pub(crate) async fn kill_9_during_turns(
    envs: &[(&str, String)],
    make_list: impl Fn() -> Box<dyn NetworkList>,
    settle: impl Fn(),
) {
    let id = Uuid::new_v4();
    let mut seen_mid = 0;
    let mut envs = envs.to_vec();
    envs.push(("ID", id.to_string()));
    for round in 0..20u64 {
        let list = make_list();
        let mut child = spawn_child("turner", &envs);
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let target = 1 + round % 3;
        let mut acked = list.stored_revision(id).await.expect("rev").unwrap_or(0);
        let mut count = 0;
        while let Some(Ok(line)) = lines.next() {
            if let Some(rev) = marked(&line, "SAVED ") {
                acked = rev.parse().expect("rev");
                count += 1;
                if count >= target {
                    break;
                }
            }
        }
        std::thread::sleep(Duration::from_micros(300 * round));
        child.kill().expect("kill");
        child.wait().expect("wait");
        settle();
        // Saves acknowledged before the kill, still in the pipe.
        for line in lines.map_while(Result::ok) {
            if let Some(rev) = marked(&line, "SAVED ") {
                acked = rev.parse().expect("rev");
            }
        }
        let list = make_list();
        let net = list
            .load(id)
            .await
            .expect("a session left by a killed save must load");
        let rev = lc_agent::revision_of(&net);
        assert!(
            rev == acked || rev == acked + 1,
            "revision {rev} after ack {acked}"
        );
        // Whole: every turn saved is there, question and answer.
        let turns = net
            .metadata_value("turns")
            .and_then(|v| v.as_u64())
            .expect("turns");
        assert_eq!(net.len() as u64, 2 * turns, "round {round}");
        let again = make_list().load(id).await.expect("load again");
        assert_eq!(again.to_json().unwrap(), net.to_json().unwrap());
        if rev == acked + 1 {
            seen_mid += 1;
        }
    }
    println!("kill -9 during incremental saves: {seen_mid}/20 kills after an unacknowledged save");
}

#[tokio::test]
async fn kill_9_during_incremental_saves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    kill_9_during_turns(
        &[("ROOT", root.display().to_string())],
        || {
            let list: Box<dyn NetworkList> = Box::new(JsonNetworkList::new(&root));
            list
        },
        || {},
    )
    .await;
    let list = JsonNetworkList::new(&root);
    let page = list.list(&ListQuery::default()).await.expect("list");
    assert_eq!(page.total, 1);
    assert!(page.errors.is_empty(), "{:?}", page.errors);
}

/// The children's side (does nothing in a normal test run).
#[test]
fn child_main() {
    let Ok(mode) = std::env::var("LC_LIST_CHILD") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        match mode.as_str() {
            "default-root" => {
                println!("ROOT {}", JsonNetworkList::default_root().display());
            }
            "writer" => writer_child().await,
            "saver" => saver_child().await,
            "turner" => turner_child().await,
            other => panic!("unknown child mode {other}"),
        }
    });
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("{key} not set"))
}

async fn writer_child() {
    let list = JsonNetworkList::new(env("ROOT"));
    let shared = Uuid::parse_str(&env("SHARED")).expect("uuid");
    let tag = env("TAG");
    let rounds: usize = env("ROUNDS").parse().expect("rounds");
    let own = RunnableNetwork::builder()
        .name(format!("own {tag}"))
        .build();
    println!("OWN {}", own.id());
    let mut conflicts = 0;
    for i in 0..rounds {
        loop {
            let net = list.load(shared).await.expect("load shared");
            let mut log: Vec<String> =
                serde_json::from_value(net.metadata_value("log").expect("log")).expect("log");
            log.push(format!("{tag}-{i}"));
            net.set_metadata("log", json!(log));
            match list.save(&net).await {
                Ok(_) => break,
                Err(ListError::Conflict { .. }) => conflicts += 1,
                Err(e) => panic!("save: {e}"),
            }
        }
        own.set_metadata("i", json!(i));
        list.save(&own).await.expect("save own");
    }
    println!("CONFLICTS {conflicts}");
}

async fn saver_child() {
    use std::io::Write;
    let list = JsonNetworkList::new(env("ROOT"));
    let id = Uuid::parse_str(&env("ID")).expect("uuid");
    let net = match list.load(id).await {
        Ok(net) => net,
        Err(ListError::NotFound { .. }) => {
            let net = RunnableNetwork::builder().id(id).name("big").build();
            net.set_metadata("payload", json!("p".repeat(300_000)));
            net
        }
        Err(e) => panic!("load: {e}"),
    };
    // Bounded: the parent kills it long before.
    for _ in 0..5000 {
        let next = lc_agent::revision_of(&net) + 1;
        net.set_metadata("seq", json!(next));
        let info = list.save(&net).await.expect("save");
        assert_eq!(info.revision, next);
        println!("SAVED {}", info.revision);
        std::io::stdout().flush().expect("flush");
    }
}

async fn turner_child() {
    use std::io::Write;
    let list: Box<dyn NetworkList> = match std::env::var("REDIS") {
        Ok(url) => Box::new(
            lc_agent::RedisNetworkList::builder(
                lc_agent::RedisConnector::new(url).expect("connector"),
            )
            .prefix("crash")
            .user("alice")
            .build()
            .expect("redis list"),
        ),
        Err(_) => Box::new(JsonNetworkList::new(env("ROOT"))),
    };
    let id = Uuid::parse_str(&env("ID")).expect("uuid");
    let model = lc_agent::ScriptedChatModel::new(["an answer"]).cycled();
    let net = match list.load(id).await {
        Ok(net) => {
            net.register_model("scripted", model);
            net
        }
        Err(ListError::NotFound { .. }) => {
            let net = RunnableNetwork::builder()
                .id(id)
                .name("crash")
                .default_node("chat")
                .chat_model("scripted")
                .model("scripted", model)
                .build();
            net.set_metadata("payload", json!("p".repeat(30_000)));
            net.set_metadata("turns", json!(0));
            net
        }
        Err(e) => panic!("load: {e}"),
    };
    // Bounded: the parent kills it long before.
    for _ in 0..2000 {
        let turns = net
            .metadata_value("turns")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        crate::incremental::turn(&net, turns as usize).await;
        net.set_metadata("turns", json!(turns + 1));
        let info = list.save(&net).await.expect("save");
        println!("SAVED {}", info.revision);
        std::io::stdout().flush().expect("flush");
    }
}
