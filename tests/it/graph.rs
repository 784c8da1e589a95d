//! Graph building: the scope guard, `>>`, removal and queries.

use lc_agent::{ChatNode, Events, HumanNode, NetworkError, NodeRef, RunnableNetwork, SystemNode};

fn texts(nodes: &[NodeRef]) -> Vec<String> {
    nodes
        .iter()
        .map(|n| match n.downcast::<HumanNode>() {
            Some(h) => h.text.clone(),
            None => n.kind().to_string(),
        })
        .collect()
}

fn parent_texts(net: &RunnableNetwork, node: &NodeRef) -> Vec<String> {
    texts(&net.parents(node.id()))
}

#[test]
fn nodes_created_in_a_scope_chain_onto_the_current_leaf() {
    let net = RunnableNetwork::new();
    let (a, b, c) = {
        let _scope = net.enter();
        (
            HumanNode::new("a"),
            HumanNode::new("b"),
            HumanNode::new("c"),
        )
    };
    assert_eq!(net.len(), 3);
    assert!(a.parents().is_empty());
    assert_eq!(b.parents(), [a.id()]);
    assert_eq!(c.parents(), [b.id()]);
    assert_eq!(net.current_leaf(), Some(c.clone()));
    assert_eq!(texts(&net.leaves()), ["c"]);
    assert!(a.network().is_some_and(|n| n == net));
}

#[test]
fn outside_a_scope_nodes_are_detached() {
    let node = HumanNode::new("alone");
    assert!(node.network().is_none());
    let net = RunnableNetwork::new();
    net.add_node(&node).unwrap();
    assert_eq!(net.len(), 1);
    // Adding it again is a no-op; adding it elsewhere is an error.
    net.add_node(&node).unwrap();
    assert_eq!(net.len(), 1);
    let other = RunnableNetwork::new();
    assert!(matches!(
        other.add_node(&node),
        Err(NetworkError::ForeignNode(id)) if id == node.id()
    ));
}

#[test]
fn scopes_nest_and_the_innermost_wins() {
    let outer = RunnableNetwork::new();
    let inner = RunnableNetwork::new();
    let _o = outer.enter();
    HumanNode::new("outer 1");
    {
        let _i = inner.enter();
        HumanNode::new("inner 1");
    }
    HumanNode::new("outer 2");
    assert_eq!(texts(&outer.nodes()), ["outer 1", "outer 2"]);
    assert_eq!(texts(&inner.nodes()), ["inner 1"]);
}

#[test]
fn guards_dropped_out_of_order_remove_only_themselves() {
    let a = RunnableNetwork::new();
    let b = RunnableNetwork::new();
    let ga = a.enter();
    let gb = b.enter();
    drop(ga); // `b` stays the active one
    HumanNode::new("to b");
    drop(gb);
    HumanNode::new("detached");
    assert_eq!(a.len(), 0);
    assert_eq!(b.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_tasks_never_see_each_others_scope() {
    let mut tasks = Vec::new();
    for t in 0..128 {
        tasks.push(tokio::spawn(async move {
            let net = RunnableNetwork::new();
            for i in 0..20 {
                {
                    let _scope = net.enter();
                    HumanNode::new(format!("{t}:{i}"));
                }
                // Let other tasks run on this worker thread between nodes.
                tokio::task::yield_now().await;
            }
            (t, net)
        }));
    }
    for task in tasks {
        let (t, net) = task.await.unwrap();
        let got = texts(&net.nodes());
        let want: Vec<String> = (0..20).map(|i| format!("{t}:{i}")).collect();
        assert_eq!(got, want, "task {t} saw foreign nodes");
        // A clean chain: each node's only parent is the one before.
        let nodes = net.nodes();
        for w in nodes.windows(2) {
            assert_eq!(w[1].parents(), [w[0].id()]);
        }
    }
}

#[test]
fn shr_chains_and_returns_the_child() {
    let net = RunnableNetwork::new();
    let _scope = net.enter();
    let a = HumanNode::new("a");
    let b = HumanNode::new("b");
    let c = HumanNode::new("c");
    // Rewire: c under a, then b under c.
    let last = a.clone() >> c.clone() >> b.clone();
    assert_eq!(last, b);
    assert_eq!(parent_texts(&net, &c), ["a"]);
    assert_eq!(parent_texts(&net, &b), ["c"]);
    assert_eq!(texts(&net.topological_order()), ["a", "c", "b"]);
    // References work too.
    let d = &a >> &HumanNode::new("d");
    assert_eq!(parent_texts(&net, &d), ["a"]);
    assert_eq!(
        texts(&net.children(a.id())),
        ["c", "d"],
        "children in connection order"
    );
}

#[test]
fn arrays_vecs_and_none_set_several_or_no_parents() {
    let net = RunnableNetwork::new();
    let _scope = net.enter();
    let a = HumanNode::new("a");
    let b = HumanNode::new("b");
    let c = HumanNode::new("c");
    let _ = [a.clone(), b.clone()] >> c.clone();
    assert_eq!(parent_texts(&net, &c), ["a", "b"]);
    let _ = vec![b.clone()] >> c.clone();
    assert_eq!(parent_texts(&net, &c), ["b"]);
    let _ = None >> c.clone();
    assert!(c.parents().is_empty());
    assert_eq!(texts(&net.leaves()), ["b", "c"]);
}

#[test]
fn detached_parents_join_the_childs_network() {
    let net = RunnableNetwork::new();
    let child = {
        let _scope = net.enter();
        HumanNode::new("child")
    };
    let parent = NodeRef::detached(lc_agent::HumanNode {
        text: "parent".into(),
        parts: Vec::new(),
    });
    let _ = parent.clone() >> child.clone();
    assert_eq!(net.len(), 2);
    assert_eq!(parent_texts(&net, &child), ["parent"]);
}

#[test]
fn cycles_are_refused_and_leave_the_graph_unchanged() {
    let net = RunnableNetwork::new();
    let _scope = net.enter();
    let a = HumanNode::new("a");
    let b = HumanNode::new("b");
    let c = HumanNode::new("c");
    let err = net.connect(std::slice::from_ref(&c), &a).unwrap_err();
    assert!(matches!(err, NetworkError::Cycle { .. }), "{err}");
    let err = net.connect(std::slice::from_ref(&a), &a).unwrap_err();
    assert!(matches!(err, NetworkError::Cycle { .. }), "{err}");
    // The operator refuses silently (logged) and changes nothing.
    let _ = c.clone() >> a.clone();
    assert!(a.parents().is_empty());
    assert_eq!(b.parents(), [a.id()]);
}

#[test]
fn removing_a_node_gives_its_children_its_parents() {
    let net = RunnableNetwork::new();
    let _scope = net.enter();
    let a = HumanNode::new("a");
    let x = None >> HumanNode::new("x");
    let b = HumanNode::new("b");
    let c = HumanNode::new("c");
    let _ = [a.clone(), x.clone()] >> b.clone();
    let _ = b.clone() >> c.clone();
    let d = HumanNode::new("d");
    let _ = [b.clone(), a.clone()] >> d.clone();
    let removed = net.remove_node(b.id()).unwrap();
    assert_eq!(removed, b);
    assert!(b.network().is_none());
    assert_eq!(parent_texts(&net, &c), ["a", "x"]);
    // `d` had b and a: b's place takes a and x, without a duplicate a.
    assert_eq!(parent_texts(&net, &d), ["a", "x"]);
    // Children keep connection order: d (connected before), then c.
    assert_eq!(texts(&net.children(a.id())), ["d", "c"]);
    assert_eq!(texts(&net.children(x.id())), ["c", "d"]);
    assert!(matches!(
        net.remove_node(b.id()),
        Err(NetworkError::UnknownNode(_))
    ));
}

#[test]
fn topological_order_puts_parents_first_with_ties_in_insertion_order() {
    let net = RunnableNetwork::new();
    let _scope = net.enter();
    let s = SystemNode::new("s");
    let late = HumanNode::new("late");
    let early = HumanNode::new("early");
    let _ = None >> early.clone();
    let _ = early.clone() >> late.clone();
    let chat = ChatNode::new();
    let _ = [s.clone(), late.clone()] >> chat.clone();
    assert_eq!(
        texts(&net.topological_order()),
        ["system", "early", "late", "chat"]
    );
    assert_eq!(texts(&net.pending()), ["system", "early", "late", "chat"]);
}

#[test]
fn removed_events_and_added_events_are_reported() {
    let net = RunnableNetwork::new();
    let mut events = net.subscribe();
    let a = {
        let _scope = net.enter();
        HumanNode::new("a")
    };
    net.remove_node(a.id()).unwrap();
    let got: Vec<_> = std::iter::from_fn(|| events.try_recv().ok()).collect();
    assert_eq!(
        got,
        [
            lc_agent::NetworkEvent::NodeAdded { node_id: a.id() },
            lc_agent::NetworkEvent::NodeRemoved { node_id: a.id() },
        ]
    );
}
