//! Prompts and completion.

use super::*;
use arbor_protocol::model::completion::{CompleteArgument, CompleteContext, CompleteRequestParams, Reference};
use arbor_protocol::model::prompts::{GetPromptRequestParams, GetPromptResult};
use std::collections::BTreeMap;

async fn get(router: &Router, name: &str, args: &[(&str, &str)]) -> Result<GetPromptResult, McpError> {
    let arguments: BTreeMap<String, String> = args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let params = GetPromptRequestParams::new(name).with_arguments(arguments);
    match router.get_prompt(params, cx()).await? {
        Reply::Complete(result) => Ok(result),
        Reply::InputRequired(_) => panic!("input required"),
    }
}

fn message_text(result: &GetPromptResult) -> &str {
    match &result.messages[0].content {
        ContentBlock::Text(t) => &t.text,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn prompt_arguments_are_derived_from_the_argument_type() {
    let list = fixture().list_prompts(first_page(), cx()).await.unwrap();
    let greet = &list.prompts[0];
    assert_eq!(greet.name, "greet");
    assert_eq!(greet.description.as_deref(), Some("Greets someone"));
    let args = greet.arguments.as_ref().unwrap();
    let summary: Vec<_> = args.iter().map(|a| (a.name.as_str(), a.required, a.description.as_deref())).collect();
    assert_eq!(
        summary,
        [("name", Some(true), Some("Who to greet.")), ("excitement", Some(false), Some("How many exclamation marks."))]
    );
}

#[tokio::test]
async fn a_prompt_gets_its_arguments_typed() {
    let router = fixture();
    let result = get(&router, "greet", &[("name", "Ada"), ("excitement", "3")]).await.unwrap();
    assert_eq!(message_text(&result), "Hello, Ada!!!");
    assert_eq!(result.description.as_deref(), Some("Greets someone"), "the prompt's description fills in");
    assert_eq!(message_text(&get(&router, "greet", &[("name", "Bo")]).await.unwrap()), "Hello, Bo!");
}

#[tokio::test]
async fn missing_or_malformed_prompt_arguments_and_unknown_prompts_are_invalid_params() {
    let router = fixture();
    let missing = get(&router, "greet", &[]).await.unwrap_err();
    assert_eq!(code(&missing), -32602);
    assert!(missing.message().contains("name"));
    let malformed = get(&router, "greet", &[("name", "Ada"), ("excitement", "lots")]).await.unwrap_err();
    assert_eq!(code(&malformed), -32602);
    assert_eq!(code(&get(&router, "farewell", &[]).await.unwrap_err()), -32602);
}

#[tokio::test]
async fn a_prompt_may_ask_for_input() {
    let router = Router::new("s", "1").prompt("p", "", |_: crate::router::NoArgs| async {
        Reply::<GetPromptResult>::InputRequired(InputRequired::new().roots("r"))
    });
    let params = GetPromptRequestParams::new("p");
    assert!(matches!(router.get_prompt(params, cx()).await.unwrap(), Reply::InputRequired(_)));
}

#[tokio::test]
async fn a_prompt_may_return_text_or_one_message() {
    let router = Router::new("s", "1")
        .prompt("owned", "", |_: crate::router::NoArgs| async { String::from("owned text") })
        .prompt("borrowed", "", |_: crate::router::NoArgs| async { "static text" })
        .prompt("one", "", |_: crate::router::NoArgs| async { PromptMessage::assistant("said") });
    for (name, role, text) in
        [("owned", Role::User, "owned text"), ("borrowed", Role::User, "static text"), ("one", Role::Assistant, "said")]
    {
        let result = get(&router, name, &[]).await.unwrap();
        assert_eq!(result.messages.len(), 1, "{name}");
        assert_eq!(result.messages[0].role, role, "{name}");
        assert_eq!(message_text(&result), text);
    }
}

fn complete_params(reference: Reference, argument: &str, value: &str) -> CompleteRequestParams {
    CompleteRequestParams::new(reference, CompleteArgument::new(argument, value))
}

fn prompt_ref(name: &str) -> Reference {
    Reference::prompt(name)
}

fn template_ref(uri: &str) -> Reference {
    Reference::resource_template(uri)
}

#[tokio::test]
async fn prompt_arguments_complete_by_prefix() {
    let result = fixture().complete(complete_params(prompt_ref("greet"), "name", "al"), cx()).await.unwrap();
    assert_eq!(result.completion.values, ["Alice", "Albert"]);
    assert_eq!(result.completion.total, Some(2));
    assert_eq!(result.completion.has_more, Some(false));
}

#[tokio::test]
async fn more_than_a_hundred_values_are_cut_with_has_more() {
    let router = fixture();
    let all = router.complete(complete_params(template_ref("test://template/{id}/data"), "id", ""), cx()).await;
    let completion = all.unwrap().completion;
    assert_eq!(completion.values.len(), 100);
    assert_eq!(completion.total, Some(250));
    assert_eq!(completion.has_more, Some(true));

    let few = router.complete(complete_params(template_ref("test://template/{id}/data"), "id", "24"), cx()).await;
    assert_eq!(
        few.unwrap().completion.values,
        ["24", "240", "241", "242", "243", "244", "245", "246", "247", "248", "249"]
    );
}

#[tokio::test]
async fn completion_sees_the_other_arguments() {
    let route = PromptRoute::new("p", |_: GreetArgs| async { Vec::<PromptMessage>::new() }).complete(
        "name",
        |req: completion::CompletionRequest, _cx: RequestContext| async move {
            Ok::<_, McpError>(vec![format!(
                "{}-{}",
                req.value,
                req.context.get("excitement").cloned().unwrap_or_default()
            )])
        },
    );
    let router = Router::new("s", "1").prompt_route(route);
    let mut params = complete_params(prompt_ref("p"), "name", "x");
    params.context = Some(CompleteContext::default().with_argument("excitement", "2"));
    assert_eq!(router.complete(params, cx()).await.unwrap().completion.values, ["x-2"]);
}

#[tokio::test]
async fn completing_the_unknown_is_invalid_params_and_an_argument_without_a_completer_has_none() {
    let router = fixture();
    let err = router.complete(complete_params(prompt_ref("nope"), "name", ""), cx()).await.unwrap_err();
    assert_eq!(code(&err), -32602);
    let err = router.complete(complete_params(template_ref("test://nope/{x}"), "x", ""), cx()).await.unwrap_err();
    assert_eq!(code(&err), -32602);
    let none = router.complete(complete_params(prompt_ref("greet"), "excitement", "1"), cx()).await.unwrap();
    assert!(none.completion.values.is_empty());
    assert_eq!(none.completion.has_more, Some(false));
}

#[tokio::test]
async fn without_completion_functions_completion_is_not_offered() {
    let router = Router::new("s", "1").prompt("p", "", greet);
    assert!(router.capabilities().completions.is_none());
    let err = router.complete(complete_params(prompt_ref("p"), "name", ""), cx()).await.unwrap_err();
    assert_eq!(code(&err), -32601);
}

#[test]
#[should_panic(expected = "has no argument `nme`")]
fn completing_an_argument_the_prompt_lacks_is_refused() {
    let _ = PromptRoute::new("p", greet).complete("nme", completion::starting_with(["x"]));
}
