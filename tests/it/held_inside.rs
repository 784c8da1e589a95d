//! A sub-network node whose inner network stops with held work holds
//! itself (`HELD_INSIDE`): the outer run stops too, without an error, the
//! nodes below it wait, and once the inner work is released the next outer
//! `invoke` goes on inside without running again what ran.

use lc_agent::HELD_INSIDE;
use lc_agent::{Events, HumanNode, InvokeOutcome, NetworkEvent, NetworkNode, RunnableNetwork};

#[tokio::test]
async fn held_work_inside_holds_the_sub_network_until_it_is_released() {
    let inner = RunnableNetwork::builder().build();
    let (first, waiting) = {
        let _s = inner.enter();
        (HumanNode::new("first"), HumanNode::new("waits"))
    };
    waiting.hold("test");
    let outer = RunnableNetwork::builder().build();
    let (sub, below) = {
        let _s = outer.enter();
        HumanNode::new("start");
        (NetworkNode::new(inner.clone()), HumanNode::new("below"))
    };
    let mut events = outer.subscribe();

    outer.invoke().await.unwrap();
    assert!(first.is_invoked(), "what could run inside ran");
    assert!(!waiting.is_invoked());
    assert_eq!(sub.held().as_deref(), Some(HELD_INSIDE));
    assert!(!sub.is_invoked() && sub.output().is_none());
    assert!(!below.is_invoked(), "the node below waits");
    let outcome = std::iter::from_fn(|| events.try_recv().ok()).find_map(|e| match e {
        NetworkEvent::InvokeFinished { outcome, .. } => Some(outcome),
        _ => None,
    });
    assert_eq!(outcome, Some(InvokeOutcome::Held(vec![sub.id()])));

    // Nothing was released: the next invoke leaves it waiting.
    outer.invoke().await.unwrap();
    assert_eq!(sub.held().as_deref(), Some(HELD_INSIDE));

    // Saved and loaded, it still waits, and goes on once released.
    let loaded = RunnableNetwork::from_json(&outer.to_json().unwrap()).unwrap();
    let nested = |net: &RunnableNetwork| {
        net.nodes()
            .iter()
            .find_map(|n| n.downcast::<NetworkNode>().map(|s| s.network().clone()))
            .unwrap()
    };
    for net in [outer.clone(), loaded] {
        let first_ran_at = nested(&net).nodes()[0].metadata_value("timings");
        nested(&net).nodes()[1].release();
        assert_eq!(net.invoke().await.unwrap().text(), "below");
        assert!(net.held().is_empty() && net.pending().is_empty());
        assert_eq!(
            nested(&net).nodes()[0].metadata_value("timings"),
            first_ran_at,
            "the first inner node did not run again"
        );
        let sub = net.nodes()[1].clone();
        assert!(sub.is_invoked() && sub.held().is_none());
        assert_eq!(sub.output().unwrap().text(), "waits");
    }
}
