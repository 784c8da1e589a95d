//! Long conversations: assembling the next request after a summary costs
//! O(recent messages), not O(all) (1,000 and 10,000 turns, with and
//! without the summary), and counting tokens (1 MB of text, MB/s).
//!
//! Run: `cargo bench -p lc-agent-deepagent --bench summary`
#![allow(clippy::unwrap_used, unreachable_pub, missing_docs)] // criterion_group! declares an undocumented pub fn

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lc_agent::{
    ChatNode, ChatRequest, HumanNode, Message, NodeRef, RunnableNetwork, SummaryExt, SystemNode,
};
use lc_agent_deepagent::{ApproxCounter, Encoding, TiktokenCounter, TokenCounter};

/// A network of `turns` answered turns (a human and an AI message each)
/// and a pending chat node at the end, its conversation cached.
fn conversation(turns: usize) -> (RunnableNetwork, NodeRef) {
    let net = RunnableNetwork::new();
    {
        let _scope = net.enter();
        SystemNode::new("You are a helpful assistant.")
            .set_output(Message::system("You are a helpful assistant."));
        for i in 0..turns {
            HumanNode::new(format!("question {i}")).set_output(Message::human(format!(
                "Question {i}: what about item {i}?"
            )));
            ChatNode::new().set_output(Message::ai(format!(
                "Answer {i}: item {i} is fine, and here is why in a sentence or two."
            )));
        }
    }
    let next = {
        let _scope = net.enter();
        HumanNode::new("latest").set_output(Message::human("And now?"));
        ChatNode::new()
    };
    (net, next)
}

fn assembly(c: &mut Criterion) {
    let mut group = c.benchmark_group("request_assembly");
    for turns in [1_000usize, 10_000] {
        let (net, next) = conversation(turns);
        // The full conversation, before any summary.
        let _ = net.input_of(&next);
        group.bench_with_input(BenchmarkId::new("no_summary", turns), &turns, |b, _| {
            b.iter(|| ChatRequest::new(net.input_of(&next)).messages().len())
        });
        net.insert_summary(
            &next,
            "The user asked about many items.",
            6,
            Default::default(),
        )
        .expect("summary");
        let sent = ChatRequest::new(net.input_of(&next)).messages().len();
        assert_eq!(
            sent,
            1 + 1 + 6,
            "system + summary + the 6 kept (the question last)"
        );
        group.bench_with_input(BenchmarkId::new("after_summary", turns), &turns, |b, _| {
            b.iter(|| ChatRequest::new(net.input_of(&next)).messages().len())
        });
    }
    group.finish();
}

fn counting(c: &mut Criterion) {
    // 1 MB of English-like prose and code.
    let unit = "The agent reads the file, finds `fn main() { println!(\"hi\"); }`, and \
                writes a summary of 3 steps: plan, act, check. ";
    let text: String = unit.repeat(1_000_000 / unit.len() + 1)[..1_000_000].to_string();
    let mut group = c.benchmark_group("token_counting_1mb");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    let counters: Vec<(&str, Box<dyn TokenCounter>)> = vec![
        (
            "o200k_base",
            Box::new(TiktokenCounter::new(Encoding::O200kBase).expect("o200k")),
        ),
        (
            "cl100k_base",
            Box::new(TiktokenCounter::new(Encoding::Cl100kBase).expect("cl100k")),
        ),
        ("approximate", Box::new(ApproxCounter)),
    ];
    for (name, counter) in &counters {
        group.bench_function(*name, |b| b.iter(|| counter.count(&text)));
    }
    group.finish();
}

criterion_group!(benches, assembly, counting);
criterion_main!(benches);
