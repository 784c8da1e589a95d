//! The sampling fields of a chat completion — `temperature`, `top_p`,
//! `max_tokens` / `max_completion_tokens`, `stop`, `seed`,
//! `presence_penalty`, `frequency_penalty` — checked as OpenAI checks them
//! (a value out of range is a 400 naming the field) and passed through to
//! the model calls of the run (a [`Sampling`] in the session's metadata,
//! see `lc_agent_deepagent::set_sampling`). What the agent cannot honour
//! is refused, never ignored: `logprobs`, `top_logprobs`, a non-empty
//! `logit_bias`.

use lc_agent::Sampling;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;

/// The sampling fields as sent (read as JSON values, so a wrong type is
/// a 400 naming the field rather than a body that does not parse).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SamplingIn {
    #[serde(default)]
    temperature: Option<Value>,
    #[serde(default)]
    top_p: Option<Value>,
    #[serde(default)]
    max_tokens: Option<Value>,
    #[serde(default)]
    max_completion_tokens: Option<Value>,
    #[serde(default)]
    stop: Option<Value>,
    #[serde(default)]
    seed: Option<Value>,
    #[serde(default)]
    presence_penalty: Option<Value>,
    #[serde(default)]
    frequency_penalty: Option<Value>,
    #[serde(default)]
    logprobs: Option<Value>,
    #[serde(default)]
    top_logprobs: Option<Value>,
    #[serde(default)]
    logit_bias: Option<Value>,
}

fn invalid(param: &str, message: String) -> ApiError {
    ApiError::Invalid {
        param: param.to_string(),
        code: "invalid_value",
        message,
    }
}

fn unsupported(param: &str, why: &str) -> ApiError {
    ApiError::Invalid {
        param: param.to_string(),
        code: "unsupported_parameter",
        message: format!("`{param}` is not supported: {why}"),
    }
}

/// A number in `low..=high`, or `None` for a missing or `null` field.
fn number(
    value: Option<&Value>,
    param: &str,
    low: f64,
    high: f64,
) -> Result<Option<f32>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            #[allow(clippy::cast_possible_truncation)]
            Some(x) if (low..=high).contains(&x) => Ok(Some(x as f32)),
            _ => Err(invalid(
                param,
                format!("{n} is not a valid `{param}`: it must be between {low} and {high}"),
            )),
        },
        Some(other) => Err(invalid(
            param,
            format!("`{param}` must be a number, got {other}"),
        )),
    }
}

/// A positive whole number of tokens.
fn tokens(value: Option<&Value>, param: &str) -> Result<Option<u32>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) if n >= 1 => Ok(Some(n)),
            _ => Err(invalid(
                param,
                format!("{v} is not a valid `{param}`: it must be a whole number of at least 1"),
            )),
        },
    }
}

impl SamplingIn {
    /// The sampling asked (empty when nothing is), or the 400 of the
    /// first field that does not fit.
    pub(crate) fn check(&self) -> Result<Sampling, ApiError> {
        if self
            .logprobs
            .as_ref()
            .is_some_and(|v| v.as_bool() == Some(true))
        {
            return Err(unsupported(
                "logprobs",
                "the answer is the agent's, written over several model calls; it has no \
                 token probabilities to give",
            ));
        }
        if self
            .logprobs
            .as_ref()
            .is_some_and(|v| !v.is_null() && !v.is_boolean())
        {
            return Err(invalid(
                "logprobs",
                "`logprobs` must be true or false".to_string(),
            ));
        }
        if self.top_logprobs.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(unsupported(
                "top_logprobs",
                "the agent gives no token probabilities",
            ));
        }
        match &self.logit_bias {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) if map.is_empty() => {}
            Some(Value::Object(_)) => {
                return Err(unsupported(
                    "logit_bias",
                    "token biases are the model's own and differ between the models an agent \
                     may use",
                ))
            }
            Some(other) => {
                return Err(invalid(
                    "logit_bias",
                    format!("`logit_bias` must be an object, got {other}"),
                ))
            }
        }
        let stop = match &self.stop {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) if items.len() <= 4 => items
                .iter()
                .map(|i| {
                    i.as_str().map(str::to_string).ok_or_else(|| {
                        invalid(
                            "stop",
                            format!("every `stop` sequence must be a string, got {i}"),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(Value::Array(items)) => {
                return Err(invalid(
                    "stop",
                    format!("`stop` has {} sequences; the most is 4", items.len()),
                ))
            }
            Some(other) => {
                return Err(invalid(
                    "stop",
                    format!("`stop` must be a string or a list of strings, got {other}"),
                ))
            }
        };
        let seed = match &self.seed {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_i64().ok_or_else(|| {
                invalid("seed", format!("`seed` must be a whole number, got {v}"))
            })?),
        };
        let max_completion = tokens(self.max_completion_tokens.as_ref(), "max_completion_tokens")?;
        let max_tokens = tokens(self.max_tokens.as_ref(), "max_tokens")?;
        Ok(Sampling {
            temperature: number(self.temperature.as_ref(), "temperature", 0.0, 2.0)?,
            top_p: number(self.top_p.as_ref(), "top_p", 0.0, 1.0)?,
            max_tokens: max_completion.or(max_tokens),
            stop,
            seed,
            presence_penalty: number(
                self.presence_penalty.as_ref(),
                "presence_penalty",
                -2.0,
                2.0,
            )?,
            frequency_penalty: number(
                self.frequency_penalty.as_ref(),
                "frequency_penalty",
                -2.0,
                2.0,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(body: Value) -> Result<Sampling, ApiError> {
        serde_json::from_value::<SamplingIn>(body).unwrap().check()
    }

    #[test]
    fn values_in_range_pass_through_and_others_name_their_field() {
        let s =
            check(json!({"temperature": 0.5, "max_tokens": 10, "stop": "END", "seed": 7})).unwrap();
        assert_eq!(s.temperature, Some(0.5));
        assert_eq!(s.max_tokens, Some(10));
        assert_eq!(s.stop, vec!["END"]);
        assert_eq!(s.seed, Some(7));
        assert!(check(json!({})).unwrap().is_empty());
        for (body, param) in [
            (json!({"temperature": 7}), "temperature"),
            (json!({"top_p": 1.5}), "top_p"),
            (json!({"max_tokens": 0}), "max_tokens"),
            (
                json!({"max_completion_tokens": "a"}),
                "max_completion_tokens",
            ),
            (json!({"stop": ["a", "b", "c", "d", "e"]}), "stop"),
            (json!({"presence_penalty": -3}), "presence_penalty"),
            (json!({"logprobs": true}), "logprobs"),
            (json!({"logit_bias": {"50256": -100}}), "logit_bias"),
        ] {
            match check(body) {
                Err(ApiError::Invalid { param: p, .. }) => assert_eq!(p, param),
                other => panic!("{param}: {other:?}"),
            }
        }
    }
}
