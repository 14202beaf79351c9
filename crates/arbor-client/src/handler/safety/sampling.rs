//! Sampling checks: the request is the approval point, so it is bounded before the
//! handler sees it.
//!
//! `maxTokens` must be positive and is clamped to the limit; `includeContext` becomes
//! `none` unless the client allows context; a request while no call is in flight (legacy)
//! is refused unless allowed; a conversation already holding more than
//! `max_tool_iterations` assistant `tool_use` turns is refused (a server looping the model
//! through tools). This module does not pick models or read results.
//!
//! Invariant: a request that passes has `0 < maxTokens <= limit` and, unless context is
//! allowed, `includeContext` absent or `none`.

use arbor_protocol::model::common::Role;
use arbor_protocol::model::content::SamplingContent;
use arbor_protocol::model::sampling::{CreateMessageRequestParams, IncludeContext, SamplingMessageContent};

use super::Refusal;
use crate::handler::limits::SamplingLimits;

/// Checks and rewrites a sampling request in place. `tools_declared`: the client
/// advertised `sampling.tools` (servers must not offer tools otherwise).
pub(crate) fn check_request(
    params: &mut CreateMessageRequestParams,
    limits: &SamplingLimits,
    tools_declared: bool,
) -> Result<(), Refusal> {
    if !tools_declared && (params.tools.as_ref().is_some_and(|t| !t.is_empty()) || params.tool_choice.is_some()) {
        return Err(Refusal::InvalidParams(
            "sampling with tools, but this client did not declare sampling.tools".to_owned(),
        ));
    }
    if params.max_tokens <= 0 {
        return Err(Refusal::InvalidParams(format!("maxTokens must be a positive integer, got {}", params.max_tokens)));
    }
    params.max_tokens = params.max_tokens.min(limits.max_tokens.max(1));
    if !limits.allow_context && params.include_context.is_some_and(|c| c != IncludeContext::None) {
        params.include_context = Some(IncludeContext::None);
    }
    let turns = tool_use_turns(params);
    if turns > limits.max_tool_iterations {
        return Err(Refusal::Rejected(format!(
            "sampling refused: {turns} assistant tool_use turns exceed the limit of {}",
            limits.max_tool_iterations
        )));
    }
    Ok(())
}

/// Refuses a legacy sampling request that arrives while no call is in flight.
pub(crate) fn check_idle(idle: bool, limits: &SamplingLimits) -> Result<(), Refusal> {
    if idle && !limits.allow_idle {
        return Err(Refusal::Rejected("sampling refused: no call is in flight".to_owned()));
    }
    Ok(())
}

/// Assistant messages holding at least one `tool_use` block.
fn tool_use_turns(params: &CreateMessageRequestParams) -> usize {
    let is_tool_use = |block: &SamplingContent| matches!(block, SamplingContent::ToolUse(_));
    params
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .filter(|m| match &m.content {
            SamplingMessageContent::One(block) => is_tool_use(block),
            SamplingMessageContent::Many(blocks) => blocks.iter().any(is_tool_use),
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn params(v: Value) -> CreateMessageRequestParams {
        serde_json::from_value(v).expect("params")
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": {"type": "text", "text": text}})
    }

    fn tool_turn(i: usize) -> Value {
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "x", "input": {}}]})
    }

    #[test]
    fn table() {
        let limits = SamplingLimits::default();
        let allow = SamplingLimits { allow_context: true, ..SamplingLimits::default() };
        let loop_of = |n: usize| {
            let mut m = vec![user("go")];
            for i in 0..n {
                m.push(tool_turn(i));
            }
            m
        };
        // (name, params, limits, Ok((maxTokens, includeContext)) or the refusal kind)
        type Want = Result<(i64, Option<IncludeContext>), &'static str>;
        let cases: Vec<(&str, Value, &SamplingLimits, Want)> = vec![
            ("plain", json!({"messages": [user("hi")], "maxTokens": 100}), &limits, Ok((100, None))),
            ("clamped", json!({"messages": [user("hi")], "maxTokens": 100000}), &limits, Ok((4096, None))),
            ("zero", json!({"messages": [user("hi")], "maxTokens": 0}), &limits, Err("invalid")),
            ("negative", json!({"messages": [user("hi")], "maxTokens": -5}), &limits, Err("invalid")),
            (
                "context coerced",
                json!({"messages": [user("hi")], "maxTokens": 1, "includeContext": "allServers"}),
                &limits,
                Ok((1, Some(IncludeContext::None))),
            ),
            (
                "context allowed",
                json!({"messages": [user("hi")], "maxTokens": 1, "includeContext": "thisServer"}),
                &allow,
                Ok((1, Some(IncludeContext::ThisServer))),
            ),
            ("five tool turns", json!({"messages": loop_of(5), "maxTokens": 1}), &limits, Ok((1, None))),
            ("six tool turns", json!({"messages": loop_of(6), "maxTokens": 1}), &limits, Err("rejected")),
        ];
        for (name, p, limits, want) in cases {
            let mut p = params(p);
            let got = check_request(&mut p, limits, false);
            match (want, got) {
                (Ok((max, ctx)), Ok(())) => {
                    assert_eq!(p.max_tokens, max, "{name}");
                    assert_eq!(p.include_context, ctx, "{name}");
                }
                (Err("invalid"), Err(Refusal::InvalidParams(_))) => {}
                (Err("rejected"), Err(Refusal::Rejected(_))) => {}
                (want, got) => panic!("{name}: wanted {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn tools_need_the_declared_capability() {
        let tool = json!({"name": "x", "inputSchema": {"type": "object"}});
        let with_tools = json!({"messages": [user("hi")], "maxTokens": 1, "tools": [tool]});
        let with_choice = json!({"messages": [user("hi")], "maxTokens": 1, "toolChoice": {"mode": "auto"}});
        let limits = SamplingLimits::default();
        for p in [with_tools, with_choice] {
            assert!(
                matches!(check_request(&mut params(p.clone()), &limits, false), Err(Refusal::InvalidParams(_))),
                "{p}"
            );
            assert_eq!(check_request(&mut params(p), &limits, true), Ok(()));
        }
    }

    #[test]
    fn a_fractional_max_tokens_does_not_decode() {
        let v = json!({"messages": [], "maxTokens": 1.5});
        assert!(serde_json::from_value::<CreateMessageRequestParams>(v).is_err());
    }

    #[test]
    fn idle() {
        let strict = SamplingLimits::default();
        let lax = SamplingLimits { allow_idle: true, ..SamplingLimits::default() };
        assert!(matches!(check_idle(true, &strict), Err(Refusal::Rejected(_))));
        assert_eq!(check_idle(false, &strict), Ok(()));
        assert_eq!(check_idle(true, &lax), Ok(()));
    }
}
