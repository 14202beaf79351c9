//! Pagination, run-time changes and capability derivation.

use super::*;
use crate::handler::ListKind;
use crate::router::pagination::{self, ListId};
use crate::router::NoArgs;

fn numbered_tool(i: usize) -> ToolRoute {
    ToolRoute::new(format!("tool{i}"), |_: NoArgs| async { "ok" })
}

fn router_with_tools(count: usize, page_size: usize) -> Router {
    (0..count).fold(Router::new("s", "1").page_size(page_size), |r, i| r.tool_route(numbered_tool(i)))
}

async fn all_tool_names(router: &Router) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor = None;
    loop {
        let mut params = PaginatedRequestParams::default();
        params.cursor = cursor.take();
        let page = router.list_tools(params, cx()).await.unwrap();
        names.extend(page.tools.into_iter().map(|t| t.name));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return names,
        }
    }
}

#[tokio::test]
async fn lists_page_in_registration_order_until_no_cursor() {
    let router = router_with_tools(5, 2);
    let first = router.list_tools(first_page(), cx()).await.unwrap();
    assert_eq!(first.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["tool0", "tool1"]);
    let second = router.list_tools(page_at(first.next_cursor.as_deref().unwrap()), cx()).await.unwrap();
    assert_eq!(second.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["tool2", "tool3"]);
    let third = router.list_tools(page_at(second.next_cursor.as_deref().unwrap()), cx()).await.unwrap();
    assert_eq!(third.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["tool4"]);
    assert_eq!(third.next_cursor, None);

    let exact = router_with_tools(4, 2);
    assert_eq!(all_tool_names(&exact).await.len(), 4, "a full last page has no cursor after it");
    assert_eq!(all_tool_names(&router_with_tools(250, crate::router::DEFAULT_PAGE_SIZE)).await.len(), 250);
}

#[tokio::test]
async fn invalid_cursors_are_invalid_params() {
    let router = router_with_tools(3, 1);
    let issued = router.list_tools(first_page(), cx()).await.unwrap().next_cursor.unwrap();
    let prompts_cursor = pagination::encode(ListId::Prompts, 1);
    let never_issued = pagination::encode(ListId::Tools, 99);
    for bad in ["", "not base64!", "dDo", &prompts_cursor, &never_issued, "dDorMQ"] {
        let err = router.list_tools(page_at(bad), cx()).await.unwrap_err();
        assert_eq!(code(&err), -32602, "{bad:?}");
    }
    assert!(router.list_tools(page_at(&issued), cx()).await.is_ok());
}

#[tokio::test]
async fn paging_across_changes_neither_repeats_nor_skips_what_stays() {
    let router = router_with_tools(4, 2);
    let handle = router.handle();
    let first = router.list_tools(first_page(), cx()).await.unwrap();
    assert!(handle.remove_tool("tool1"), "an entry already sent goes");
    assert!(handle.remove_tool("tool2"), "an entry not yet sent goes");
    handle.add_tool(numbered_tool(9));
    let rest = router.list_tools(page_at(first.next_cursor.as_deref().unwrap()), cx()).await.unwrap();
    assert_eq!(rest.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["tool3", "tool9"]);
}

#[tokio::test]
async fn run_time_changes_are_announced_and_listed() {
    let router = fixture();
    assert!(router.list_changes().is_none(), "a router nobody can change announces nothing");
    let handle = router.handle();
    let mut changes = router.list_changes().expect("a dynamic router announces changes");

    assert!(!handle.add_tool(numbered_tool(1)));
    assert_eq!(changes.try_recv(), Some(ListKind::Tools));
    assert!(all_tool_names(&router).await.contains(&"tool1".to_owned()));
    assert_eq!(handle.tool_names().last().map(String::as_str), Some("tool1"));
    assert!(call(&router, "tool1", json!({})).await.is_ok());

    assert!(handle.remove_tool("add"));
    assert_eq!(changes.try_recv(), Some(ListKind::Tools));
    assert!(!all_tool_names(&router).await.contains(&"add".to_owned()));
    assert_eq!(code(&call(&router, "add", json!({"a": 1, "b": 2})).await.unwrap_err()), -32602);

    assert!(!handle.remove_tool("add"), "removing what is gone changes nothing");
    assert_eq!(changes.try_recv(), None);

    assert!(handle.remove_prompt("greet"));
    assert_eq!(changes.try_recv(), Some(ListKind::Prompts));
    assert!(router.list_prompts(first_page(), cx()).await.unwrap().prompts.is_empty());
    assert!(handle.remove_resource("test://static/readme"));
    assert_eq!(changes.try_recv(), Some(ListKind::Resources));
    assert!(handle.remove_template("test://names/{name}"));
    assert_eq!(changes.try_recv(), Some(ListKind::Resources));
    assert_eq!(router.list_resource_templates(first_page(), cx()).await.unwrap().resource_templates.len(), 1);

    handle.add_prompt(PromptRoute::new("again", greet));
    assert_eq!(changes.try_recv(), Some(ListKind::Prompts));
    handle.add_resource(crate::router::ResourceRoute::new("test://new", "new", || async { "new" }));
    assert_eq!(changes.try_recv(), Some(ListKind::Resources));
    handle.add_template(TemplateRoute::new("test://t/{name}", "t", named));
    assert_eq!(changes.try_recv(), Some(ListKind::Resources));
}

#[tokio::test]
async fn replacing_keeps_the_place_in_the_list() {
    let router = router_with_tools(3, 10);
    let handle = router.handle();
    assert!(handle.add_tool(numbered_tool(0).description("new")));
    let list = router.list_tools(first_page(), cx()).await.unwrap();
    assert_eq!(list.tools[0].name, "tool0");
    assert_eq!(list.tools[0].description.as_deref(), Some("new"));
}

#[tokio::test]
async fn a_call_in_flight_survives_the_removal_of_its_tool() {
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = parking_lot::Mutex::new(Some(released));
    let router = Router::new("s", "1").tool("slow", "", move |_: NoArgs| {
        let released = released.lock().take();
        async move {
            if let Some(r) = released {
                let _ = r.await;
            }
            "done"
        }
    });
    let handle = router.handle();
    let running = tokio::spawn({
        let router = router.clone();
        async move { call(&router, "slow", json!({})).await }
    });
    tokio::task::yield_now().await;
    handle.remove_tool("slow");
    release.send(()).unwrap();
    assert_eq!(text_of(&running.await.unwrap().unwrap()), "done");
}

#[tokio::test]
async fn capabilities_name_only_what_is_served() {
    let empty = Router::new("s", "1");
    let caps = empty.capabilities();
    assert!(caps.logging.is_some(), "the runtime always serves logging");
    assert!(caps.tools.is_none() && caps.prompts.is_none() && caps.resources.is_none() && caps.completions.is_none());
    assert_eq!(code(&empty.list_tools(first_page(), cx()).await.unwrap_err()), -32601);
    assert_eq!(code(&empty.list_prompts(first_page(), cx()).await.unwrap_err()), -32601);
    assert_eq!(code(&empty.list_resources(first_page(), cx()).await.unwrap_err()), -32601);

    let tools_only = Router::new("s", "1").tool("add", "", add);
    let caps = tools_only.capabilities();
    assert_eq!(caps.tools.as_ref().map(|t| t.list_changed), Some(None), "listChanged only when dynamic");
    assert!(caps.prompts.is_none() && caps.resources.is_none() && caps.completions.is_none());

    let caps = fixture().capabilities();
    assert!(caps.tools.is_some() && caps.prompts.is_some() && caps.resources.is_some());
    assert!(caps.completions.is_some());

    let dynamic = fixture();
    let _handle = dynamic.handle();
    let caps = dynamic.capabilities();
    assert_eq!(caps.tools.unwrap().list_changed, Some(true));
    assert_eq!(caps.prompts.unwrap().list_changed, Some(true));
    assert_eq!(caps.resources.unwrap().list_changed, Some(true));
}

#[tokio::test]
async fn an_advertised_or_once_served_list_stays_served_when_empty() {
    let router = Router::new("s", "1").advertise(ListKind::Tools);
    assert!(router.capabilities().tools.is_some());
    assert!(router.list_tools(first_page(), cx()).await.unwrap().tools.is_empty());

    let router = Router::new("s", "1").prompt("p", "", greet);
    let handle = router.handle();
    handle.remove_prompt("p");
    assert!(router.capabilities().prompts.is_some());
    assert!(router.list_prompts(first_page(), cx()).await.unwrap().prompts.is_empty());
}

#[test]
fn server_info_carries_the_instructions() {
    let info = Router::new("demo", "2.0").instructions("Be brief.").info();
    assert_eq!((info.implementation.name.as_str(), info.implementation.version.as_str()), ("demo", "2.0"));
    assert_eq!(info.instructions.as_deref(), Some("Be brief."));
}
