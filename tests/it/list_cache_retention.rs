//! The session cache and retention of [`Lists`],
//! on the JSON list and on a real redis-server:
//! - a kept network is handed out after a revision check; a save or a
//!   delete by another process (another `Lists` on the same store) is seen;
//!   a copy changed and never saved is never handed out;
//! - sessions expire after their latest save: listing removes them, a
//!   load says not found, and in Redis the keys carry a TTL.

use std::time::Duration;

use lc_agent::{HumanNode, ListConfig, ListError, ListQuery, Lists, NetworkList, RunnableNetwork};
use lc_agent_test_support::{needs, RedisServer};

fn net(name: &str) -> RunnableNetwork {
    let net = RunnableNetwork::builder().name(name).build();
    {
        let _scope = net.enter();
        HumanNode::new("hello");
    }
    net
}

async fn cache_sees_other_servers(config: ListConfig) {
    let here = config.open().unwrap().cache(8);
    let there = config.open().unwrap(); // another server, no cache
    let mine = here.user("alice").unwrap();
    let theirs = there.user("alice").unwrap();
    let cache = here.session_cache().unwrap().clone();

    let n = net("cached");
    mine.save(&n).await.unwrap();
    drop(n);
    // Unchanged: the kept network, no read.
    let loaded = mine.load_first().await;
    assert_eq!(cache.hits_and_misses(), (1, 0));
    assert_eq!(loaded.len(), 1);
    let id = loaded.id();
    mine.save(&loaded).await.unwrap();
    drop(loaded);

    // Another server saves: the next load reads the store.
    let other = theirs.load(id).await.unwrap();
    other.set_name("renamed elsewhere");
    theirs.save(&other).await.unwrap();
    let loaded = mine.load(id).await.unwrap();
    assert_eq!(loaded.name(), "renamed elsewhere");
    assert_eq!(cache.hits_and_misses(), (1, 1));

    // A copy changed but never saved is not what the next load gets.
    mine.save(&loaded).await.unwrap();
    drop(loaded);
    let changed = mine.load(id).await.unwrap();
    assert_eq!(cache.hits_and_misses(), (2, 1));
    changed.set_name("never saved");
    drop(changed);
    let loaded = mine.load(id).await.unwrap();
    assert_eq!(loaded.name(), "renamed elsewhere");
    mine.save(&loaded).await.unwrap();
    drop(loaded);

    // A copy still held (a stream reading it) is not handed out twice.
    let held = mine.load(id).await.unwrap();
    mine.save(&held).await.unwrap();
    let second = mine.load(id).await.unwrap();
    assert!(second != held);
    drop((held, second));

    // Another server deletes: the kept copy is not served, nor saved back.
    let kept = mine.load(id).await.unwrap();
    mine.save(&kept).await.unwrap();
    drop(kept);
    assert!(theirs.delete(id).await.unwrap());
    match mine.load(id).await {
        Err(ListError::NotFound { .. } | ListError::Deleted { .. }) => {}
        other => panic!(
            "a deleted session was served: {:?}",
            other.map(|n| n.name())
        ),
    }
}

trait LoadFirst {
    async fn load_first(&self) -> RunnableNetwork;
}

impl LoadFirst for std::sync::Arc<dyn NetworkList> {
    async fn load_first(&self) -> RunnableNetwork {
        let page = self.list(&ListQuery::default()).await.unwrap();
        self.load(page.sessions[0].id).await.unwrap()
    }
}

async fn sessions_expire(lists: Lists, redis: Option<&RedisServer>) {
    let alice = lists.user("alice").unwrap();
    let old = net("old");
    alice.save(&old).await.unwrap();
    if let Some(redis) = redis {
        // The user's keys carry the retention as a TTL.
        let key = format!("lc_agent:user:{{alice}}:entry:{}", old.id());
        let ttl = redis_cli(redis, &["PTTL", &key]);
        let ttl: i64 = ttl.trim().parse().unwrap();
        assert!(ttl > 0 && ttl <= 1500, "PTTL {key} = {ttl}");
    }
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let fresh = net("fresh");
    alice.save(&fresh).await.unwrap();
    match alice.load(old.id()).await {
        Err(ListError::NotFound { .. }) => {}
        other => panic!("an expired session loaded: {:?}", other.map(|n| n.name())),
    }
    let page = alice.list(&ListQuery::default()).await.unwrap();
    let names: Vec<&str> = page.sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fresh"]);
    assert_eq!(page.total, 1);
    if redis.is_none() {
        // Removed by the list is deleted: a copy still running cannot
        // bring it back. (Keys Redis expired by their TTL leave no
        // tombstone.)
        assert!(matches!(
            alice.save(&old).await,
            Err(ListError::Deleted { .. })
        ));
    }
}

fn redis_cli(redis: &RedisServer, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &redis.port().to_string()])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[tokio::test]
async fn the_cache_sees_saves_and_deletes_of_other_servers_json() {
    let dir = tempfile::tempdir().unwrap();
    cache_sees_other_servers(ListConfig::json(dir.path())).await;
}

#[needs(redis)]
#[tokio::test]
async fn the_cache_sees_saves_and_deletes_of_other_servers_redis() {
    let redis = RedisServer::start();
    cache_sees_other_servers(ListConfig::redis(redis.url())).await;
}

#[tokio::test]
async fn sessions_expire_after_the_retention_json() {
    let dir = tempfile::tempdir().unwrap();
    let lists = ListConfig::json(dir.path())
        .open()
        .unwrap()
        .cache(4)
        .retention(Duration::from_millis(1500));
    sessions_expire(lists, None).await;
}

#[needs(redis)]
#[tokio::test]
async fn sessions_expire_after_the_retention_redis() {
    let redis = RedisServer::start();
    let lists = ListConfig::redis(redis.url())
        .open()
        .unwrap()
        .retention(Duration::from_millis(1500));
    sessions_expire(lists, Some(&redis)).await;
}
