//! A transcript given whole — questions still to run, answers given with
//! `set_output` (what a stateless chat history becomes) — runs in order:
//! every question before the answer below it, and the new question's chat
//! node reads them all.

use lc_agent::{ChatNode, HumanNode, Message, RunnableNetwork, SystemNode};

use super::invoke::Transcript;

#[tokio::test]
async fn a_given_transcript_runs_parents_first_and_the_answer_reads_it_whole() {
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("t")
        .model("t", Transcript)
        .build();
    {
        let _scope = net.enter();
        SystemNode::new("Be brief.");
        HumanNode::new("first");
        ChatNode::new().set_output(Message::ai("one"));
        HumanNode::new("second");
        ChatNode::new().set_output(Message::ai("two"));
        HumanNode::new("third");
    }
    // Something reads the given answers' conversations before the run
    // (a title, a token count): their caches must not outlive it.
    for node in net.nodes() {
        let _ = net.history_of(&node);
    }
    let reply = net.invoke().await.unwrap();
    assert_eq!(
        reply.text(),
        "system=Be brief.|human=first|ai=one|human=second|ai=two|human=third"
    );
}
