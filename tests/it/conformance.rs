//! The `NetworkList` conformance suite: every implementation must pass it
//! (run by `list_json` and `list_redis`).

use std::collections::HashSet;

use lc_agent::{
    Attachments, FnTool, HumanNode, RunnableNetwork, ScriptedChatModel, ToolOutput, Turn,
};
use lc_agent::{ListError, ListQuery, NetworkList, CREATED_AT_KEY, REVISION_KEY, UPDATED_AT_KEY};
use serde_json::json;

/// A small invoked conversation: human, chat (tool call), tool, chat.
pub(crate) async fn conversation(name: &str) -> (RunnableNetwork, ScriptedChatModel) {
    let model = ScriptedChatModel::new([
        Turn::call("c1", "echo", json!({"x": 1})),
        Turn::text("done"),
    ]);
    let net = RunnableNetwork::builder()
        .name(name)
        .default_node("chat")
        .chat_model("scripted")
        .model("scripted", model.clone())
        .tool(echo_tool())
        .build();
    {
        let _s = net.enter();
        HumanNode::new("hi");
    }
    net.invoke().await.expect("invoke");
    (net, model)
}

pub(crate) fn echo_tool() -> FnTool {
    FnTool::new(
        "echo",
        "Echoes its arguments.",
        json!({"type": "object"}),
        |args, _| async move { Ok(ToolOutput::ok(args.to_string())) },
    )
}

fn named(name: &str) -> RunnableNetwork {
    RunnableNetwork::builder().name(name).build()
}

/// Runs every check on `list` (an empty store) and `other` (the same
/// store, another user).
pub(crate) async fn run_all(list: &dyn NetworkList, other: &dyn NetworkList) {
    round_trip(list).await;
    revisions_and_timestamps(list).await;
    missing_and_delete(list).await;
    listing_and_paging(list, other).await;
    conflicts(list).await;
    find_and_load_all(list).await;
    save_touches_only_its_own_session(list).await;
    resume_after_load(list).await;
}

async fn wipe(list: &dyn NetworkList) {
    for info in list
        .list_everything()
        .await
        .expect("list")
        .into_iter()
        .flatten()
    {
        list.delete(info.id).await.expect("delete");
    }
    assert_eq!(
        list.list(&ListQuery::default()).await.expect("list").total,
        0
    );
}

async fn round_trip(list: &dyn NetworkList) {
    let (net, _) = conversation("round trip").await;
    let info = list.save(&net).await.expect("save");
    assert_eq!(info.id, net.id());
    assert_eq!(info.name, "round trip");
    assert_eq!(info.node_count, 4);
    assert_eq!(info.revision, 1);
    assert_eq!(info.user, list.user());
    let saved = net.to_json().expect("json");
    assert_eq!(info.bytes, saved.len() as u64);
    // Stored exactly as to_json() writes it, and loads back to the same bytes.
    assert_eq!(list.load_json(net.id()).await.expect("load_json"), saved);
    let loaded = list.load(net.id()).await.expect("load");
    assert_eq!(loaded.to_json().expect("json"), saved);
    assert_eq!(loaded.len(), 4);
    assert_eq!(
        loaded
            .history()
            .last()
            .map(|m| m.text().to_string())
            .as_deref(),
        Some("done")
    );
    wipe(list).await;
}

async fn revisions_and_timestamps(list: &dyn NetworkList) {
    let net = named("rev");
    assert_eq!(net.metadata_value(REVISION_KEY), None);
    let first = list.save(&net).await.expect("save");
    assert_eq!(net.metadata_value(REVISION_KEY), Some(json!(1)));
    let created = net.metadata_value(CREATED_AT_KEY).expect("created_at");
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    net.set_name("rev renamed"); // renaming is a save
    let second = list.save(&net).await.expect("save again");
    assert_eq!(second.revision, 2);
    assert_eq!(net.metadata_value(CREATED_AT_KEY), Some(created));
    assert_eq!(second.created_at, first.created_at);
    assert!(second.updated_at > first.updated_at);
    assert_eq!(
        net.metadata_value(UPDATED_AT_KEY)
            .and_then(|v| v.as_str().map(String::from)),
        Some(
            second
                .updated_at
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
        )
    );
    let page = list.list(&ListQuery::default()).await.expect("list");
    assert_eq!(page.sessions.len(), 1);
    assert_eq!(page.sessions[0].name, "rev renamed");
    assert_eq!(page.sessions[0].revision, 2);
    assert_eq!(list.stored_revision(net.id()).await.expect("rev"), Some(2));
    assert_eq!(
        list.stored_revision(uuid::Uuid::new_v4())
            .await
            .expect("rev"),
        None
    );
    wipe(list).await;
}

async fn missing_and_delete(list: &dyn NetworkList) {
    let missing = uuid::Uuid::new_v4();
    assert!(matches!(list.load(missing).await, Err(ListError::NotFound { id }) if id == missing));
    assert!(!list.delete(missing).await.expect("delete missing"));
    let net = named("doomed");
    list.save(&net).await.expect("save");
    assert!(list.delete(net.id()).await.expect("delete"));
    assert!(!list.delete(net.id()).await.expect("delete twice"));
    assert!(matches!(
        list.load(net.id()).await,
        Err(ListError::NotFound { .. })
    ));
    let page = list.list(&ListQuery::default()).await.expect("list");
    assert_eq!(page.total, 0);
    assert!(page.sessions.is_empty() && page.errors.is_empty());
    // A delete is final: a copy still held elsewhere cannot bring the
    // session back, not even by force, and nothing is written.
    assert!(matches!(
        list.save(&net).await,
        Err(ListError::Deleted { id }) if id == net.id()
    ));
    assert!(matches!(
        list.save_force(&net).await,
        Err(ListError::Deleted { .. })
    ));
    assert_eq!(
        list.stored_revision(net.id()).await.expect("revision"),
        None
    );
    assert_eq!(
        list.list(&ListQuery::default()).await.expect("list").total,
        0
    );
    assert!(!list.delete(net.id()).await.expect("delete a deleted one"));
    // Deleting an id that never existed leaves no tombstone.
    let never = named("never saved");
    assert!(!list.delete(never.id()).await.expect("delete unsaved"));
    list.save(&never).await.expect("save a new session");
    wipe(list).await;
}

async fn listing_and_paging(list: &dyn NetworkList, other: &dyn NetworkList) {
    let mut ids = Vec::new();
    for i in 0..7 {
        let net = named(&format!("s{i}"));
        list.save(&net).await.expect("save");
        ids.push(net.id());
    }
    let mine = other_named(other, "elsewhere").await;
    // Newest first.
    let page = list.list(&ListQuery::default()).await.expect("list");
    assert_eq!(page.total, 7);
    let names: Vec<_> = page.sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["s6", "s5", "s4", "s3", "s2", "s1", "s0"]);
    assert!(page.errors.is_empty(), "{:?}", page.errors);
    // Pages.
    let p1 = list
        .list(&ListQuery {
            limit: 3,
            ..ListQuery::default()
        })
        .await
        .expect("p1");
    let p2 = list
        .list(&ListQuery {
            offset: 3,
            limit: 3,
            ..ListQuery::default()
        })
        .await
        .expect("p2");
    let p3 = list
        .list(&ListQuery {
            offset: 6,
            limit: 3,
            ..ListQuery::default()
        })
        .await
        .expect("p3");
    let p4 = list
        .list(&ListQuery {
            offset: 9,
            limit: 3,
            ..ListQuery::default()
        })
        .await
        .expect("p4");
    assert_eq!(
        (
            p1.sessions.len(),
            p2.sessions.len(),
            p3.sessions.len(),
            p4.sessions.len()
        ),
        (3, 3, 1, 0)
    );
    assert_eq!(p4.total, 7);
    let all: Vec<_> = [p1, p2, p3]
        .into_iter()
        .flat_map(|p| p.sessions)
        .map(|s| s.name)
        .collect();
    assert_eq!(all, ["s6", "s5", "s4", "s3", "s2", "s1", "s0"]);
    // Updating an old session moves it to the front.
    let s0 = list.load(ids[0]).await.expect("load s0");
    list.save(&s0).await.expect("save s0");
    let page = list
        .list(&ListQuery {
            limit: 2,
            ..ListQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(page.sessions[0].name, "s0");
    // Users are separate namespaces.
    let theirs = list
        .list(&ListQuery {
            user: Some(other.user().into()),
            ..ListQuery::default()
        })
        .await
        .expect("list other");
    assert_eq!(theirs.total, 1);
    assert_eq!(theirs.sessions[0].id, mine);
    assert_eq!(theirs.sessions[0].user, other.user());
    assert!(matches!(
        list.load(mine).await,
        Err(ListError::NotFound { .. })
    ));
    assert!(matches!(
        list.list(&ListQuery {
            user: Some("../etc".into()),
            ..ListQuery::default()
        })
        .await,
        Err(ListError::InvalidUser(_))
    ));
    other.delete(mine).await.expect("delete other");
    wipe(list).await;
}

async fn other_named(other: &dyn NetworkList, name: &str) -> uuid::Uuid {
    let net = named(name);
    other.save(&net).await.expect("save other user");
    net.id()
}

async fn conflicts(list: &dyn NetworkList) {
    let net = named("shared");
    list.save(&net).await.expect("save");
    // Two app servers load the same session at revision 1.
    let a = list.load(net.id()).await.expect("load a");
    let b = list.load(net.id()).await.expect("load b");
    a.set_name("from a");
    list.save(&a).await.expect("a saves first");
    b.set_name("from b");
    let before = b.metadata();
    match list.save(&b).await {
        Err(ListError::Conflict {
            id,
            expected,
            found,
        }) => {
            assert_eq!((id, expected, found), (net.id(), 1, 2));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    // The refused copy is left as it was, and the stored one is a's.
    assert_eq!(b.metadata(), before);
    assert_eq!(list.load(net.id()).await.expect("load").name(), "from a");
    // The original handle (revision 1) is stale too.
    assert!(matches!(
        list.save(&net).await,
        Err(ListError::Conflict { .. })
    ));
    // save_force overrides and lands above the stored revision.
    let forced = list.save_force(&b).await.expect("force");
    assert_eq!(forced.revision, 3);
    let stored = list.load(net.id()).await.expect("load");
    assert_eq!(stored.name(), "from b");
    assert_eq!(stored.metadata_value(REVISION_KEY), Some(json!(3)));
    // And b is now current: a plain save works again.
    assert_eq!(list.save(&b).await.expect("save b").revision, 4);
    wipe(list).await;
}

async fn find_and_load_all(list: &dyn NetworkList) {
    let mut wanted = HashSet::new();
    for i in 0..5 {
        let net = named(&format!("f{i}"));
        net.set_metadata(
            "project",
            json!(if i % 2 == 0 { "apollo" } else { "gemini" }),
        );
        list.save(&net).await.expect("save");
        if i % 2 == 0 {
            wanted.insert(net.id());
        }
    }
    let found = list.find("project", &json!("apollo")).await.expect("find");
    assert_eq!(found.iter().map(|s| s.id).collect::<HashSet<_>>(), wanted);
    assert!(found.windows(2).all(|w| w[0].updated_at >= w[1].updated_at));
    assert!(list
        .find("project", &json!("mercury"))
        .await
        .expect("find")
        .is_empty());
    let all = list.load_all().await.expect("load_all");
    assert_eq!(all.len(), 5);
    let names: Vec<String> = all.into_iter().map(|r| r.expect("loads").name()).collect();
    assert_eq!(names, ["f4", "f3", "f2", "f1", "f0"]);
    wipe(list).await;
}

async fn save_touches_only_its_own_session(list: &dyn NetworkList) {
    let (a, _) = conversation("a").await;
    let (b, _) = conversation("b").await;
    list.save(&a).await.expect("save a");
    list.save(&b).await.expect("save b");
    let b_before = list.load_json(b.id()).await.expect("b");
    for i in 0..3 {
        a.set_metadata("step", json!(i));
        list.save(&a).await.expect("save a again");
    }
    assert_eq!(list.load_json(b.id()).await.expect("b"), b_before);
    assert!(list.delete(a.id()).await.expect("delete a"));
    assert_eq!(list.load_json(b.id()).await.expect("b"), b_before);
    wipe(list).await;
}

async fn resume_after_load(list: &dyn NetworkList) {
    let (net, model) = conversation("resume").await;
    assert_eq!(model.calls(), 2);
    list.save(&net).await.expect("save");
    let loaded = list.load(net.id()).await.expect("load");
    // Everything already ran: invoking the loaded copy runs nothing.
    let fresh = ScriptedChatModel::new(["should not be called"]);
    loaded.register_model("scripted", fresh.clone());
    loaded.add_tool(echo_tool());
    let out = loaded.invoke().await.expect("invoke");
    assert_eq!(out.text(), "done");
    assert_eq!(fresh.calls(), 0);
    // Continue the conversation and save again at the next revision.
    {
        let _s = loaded.enter();
        HumanNode::new("more");
    }
    let out = loaded.invoke().await.expect("invoke");
    assert_eq!(out.text(), "should not be called");
    assert_eq!(list.save(&loaded).await.expect("save").node_count, 6);
    wipe(list).await;
}
