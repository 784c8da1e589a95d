//! # Session titles written by a model
//!
//! Shows: `titles::write_title` after the first answer. The network
//! routes the `title` step to a small model, which names the
//! conversation in a few words; the title becomes the network's name
//! (what `sessions list` and the web page show) and its `title`
//! metadata. Without a `title` route nothing is asked and the caller's
//! title (the CLI's: the first message) stays.
//!
//! Needs: nothing; it runs offline with `ScriptedChatModel`s that replay
//! fixed answers (stand-ins for a main and a small model).
//!
//! Run: `cargo run --example titles`

use lc_agent::{HumanNode, ModelRoutes, RunnableNetwork, ScriptedChatModel};
use lc_agent_deepagent::{write_title, TITLE_STEP};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let main = ScriptedChatModel::new([
        "Split on whitespace, reverse, join: `line.split_whitespace().rev()`.",
    ]);
    let small = ScriptedChatModel::new(["\"Reversing the words of a line in Rust.\""]);
    let net = RunnableNetwork::builder()
        .default_node("chat")
        .chat_model("main")
        .model("main", main)
        .model("small", small)
        .build();
    net.set_model_route(TITLE_STEP, "small");
    {
        let _scope = net.enter();
        HumanNode::new("how do i reverse the words of a line in rust? thx");
    }
    let answer = net.invoke().await?;
    println!("answer: {}", answer.text());
    match write_title(&net).await? {
        Some(title) => println!("title:  {title} (the network's name: {})", net.name()),
        None => println!("no `title` route: the title stays as it was"),
    }
    Ok(())
}
