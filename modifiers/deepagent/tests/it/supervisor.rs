//! A supervisor driven by scripted models (stand-ins for real ones): it
//! calls a route, which sees the outer conversation and the prompt; a
//! repeated call is refused with a loop error; the final answer joins the
//! outer conversation; turns are capped; supervisors nest.

use crate::common;

use std::sync::Arc;

use async_trait::async_trait;
use lc_agent::{
    Attachments, ChatModel, ChatRequest, ChatResponse, HumanNode, ModelError, ModelRoutes,
    NetworkError, NetworkNode, RunnableNetwork, ScriptedChatModel, SystemNode, ToolStatus, Turn,
};
use lc_agent_deepagent::{Route, Supervisor};
use parking_lot::Mutex;
use serde_json::json;

/// Answers with a fixed text and keeps the conversations it was sent.
#[derive(Clone)]
struct Recording {
    answer: &'static str,
    seen: Arc<Mutex<Vec<Vec<String>>>>,
}

#[async_trait]
impl ChatModel for Recording {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.seen.lock().push(
            request
                .history
                .to_vec()
                .iter()
                .map(|m| format!("{}: {}", m.role(), m.text()))
                .collect(),
        );
        Ok(ChatResponse::text(self.answer))
    }
}

fn weather_route() -> Route {
    Route::new("weather", "Knows the weather of a city.", || {
        let net = RunnableNetwork::builder()
            .default_node("chat")
            .chat_model("weather-model")
            .build();
        {
            let _s = net.enter();
            SystemNode::new("You report the weather.");
        }
        net
    })
}

#[tokio::test]
async fn the_supervisor_calls_routes_refuses_loops_and_answers_the_outer_conversation() {
    let boss = ScriptedChatModel::new([
        Turn::call("r1", "weather", json!({"prompt": "Weather in Lisbon?"})),
        Turn::call("r2", "weather", json!({"prompt": "Weather in Lisbon?"})),
        Turn::text("Go to Lisbon: it is sunny."),
    ]);
    let weather = Recording {
        answer: "Sunny, 24 °C.",
        seen: Arc::default(),
    };
    let supervisor = Supervisor::new("You plan trips with your routes.")
        .route(weather_route())
        .build();
    let outer = RunnableNetwork::builder()
        .chat_model("boss")
        .model("boss", boss)
        .model("weather-model", weather.clone())
        .build();
    {
        let _s = outer.enter();
        HumanNode::new("Plan a trip to Lisbon.");
        NetworkNode::new(supervisor.clone());
    }
    let reply = outer.invoke().await.unwrap();
    assert_eq!(reply.text(), "Go to Lisbon: it is sunny.");

    // The route ran once and saw the outer conversation and the prompt,
    // not the supervisor's instructions.
    let seen = weather.seen.lock().clone();
    assert_eq!(
        seen,
        [vec![
            "human: Plan a trip to Lisbon.".to_string(),
            "system: You report the weather.".to_string(),
            "human: Weather in Lisbon?".to_string(),
        ]]
    );
    let results = common::tool_results(&supervisor);
    assert_eq!(results[0], (ToolStatus::Ok, "Sunny, 24 °C.".to_string()));
    assert_eq!(results[1].0, ToolStatus::Error);
    assert!(
        results[1].1.contains("already called with these arguments"),
        "{results:?}"
    );

    // The outer conversation holds the supervisor's answer, not its turns.
    let history: Vec<String> = outer
        .history()
        .to_vec()
        .iter()
        .map(|m| m.text().to_string())
        .collect();
    assert_eq!(
        history,
        ["Plan a trip to Lisbon.", "Go to Lisbon: it is sunny."]
    );

    // Saved and loaded back byte for byte, route networks included.
    let saved = outer.to_json().unwrap();
    assert!(saved.contains("\"routed\":true"));
    assert_eq!(
        RunnableNetwork::from_json(&saved)
            .unwrap()
            .to_json()
            .unwrap(),
        saved
    );
}

#[tokio::test]
async fn turns_are_capped_and_supervisors_nest() {
    // A supervisor that never stops asking hits its cap.
    let boss = ScriptedChatModel::new((0..10).map(|i| {
        Turn::call(
            &format!("r{i}"),
            "weather",
            json!({"prompt": format!("day {i}")}),
        )
    }));
    let supervisor = Supervisor::new("Plan.")
        .route(weather_route())
        .max_iterations(3)
        .build();
    let outer = RunnableNetwork::builder()
        .chat_model("boss")
        .model("boss", boss)
        .model(
            "weather-model",
            Recording {
                answer: "Rain.",
                seen: Arc::default(),
            },
        )
        .build();
    {
        let _s = outer.enter();
        HumanNode::new("Plan.");
        NetworkNode::new(supervisor);
    }
    let err = outer.invoke().await.unwrap_err();
    let NetworkError::NodeFailed { message, .. } = &err else {
        panic!("{err}");
    };
    assert!(message.contains("step limit reached: 3"), "{message}");

    // A supervisor whose route is another supervisor.
    let top = ScriptedChatModel::new([
        Turn::call("t1", "planner", json!({"prompt": "Plan Lisbon."})),
        Turn::text("Top: done."),
    ]);
    let inner_boss = ScriptedChatModel::new([
        Turn::call("i1", "weather", json!({"prompt": "Lisbon?"})),
        Turn::text("Planner: sunny plan."),
    ]);
    let planner = Route::new("planner", "Plans trips.", move || {
        let net = Supervisor::new("You plan.").route(weather_route()).build();
        net.register_model("inner-boss", inner_boss.clone());
        net.set_model_route("supervisor", "inner-boss");
        net
    });
    let top_net = Supervisor::new("You delegate.").route(planner).build();
    let outer = RunnableNetwork::builder()
        .chat_model("top")
        .model("top", top)
        .model(
            "weather-model",
            Recording {
                answer: "Sunny.",
                seen: Arc::default(),
            },
        )
        .build();
    {
        let _s = outer.enter();
        HumanNode::new("Trip?");
        NetworkNode::new(top_net.clone());
    }
    assert_eq!(outer.invoke().await.unwrap().text(), "Top: done.");
    assert_eq!(
        common::tool_results(&top_net),
        [(ToolStatus::Ok, "Planner: sunny plan.".to_string())]
    );
}
