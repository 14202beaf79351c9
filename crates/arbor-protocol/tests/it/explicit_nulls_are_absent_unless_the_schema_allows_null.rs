//! Peers that write `null` for an absent optional member are understood; members
//! the schema makes nullable, and free JSON values, keep their `null`.

use arbor_protocol::model::content::TextContent;
use arbor_protocol::model::tasks::Task;
use arbor_protocol::model::tools::{CallToolResult, ListToolsResult};
use serde_json::{json, Value};

#[test]
fn a_null_optional_member_reads_as_absent() {
    let text: TextContent =
        serde_json::from_str(r#"{"type":"text","text":"x","annotations":null,"_meta":null}"#).unwrap();
    assert_eq!((text.annotations, text.meta), (None, None));
    let list: ListToolsResult = serde_json::from_str(r#"{"tools":[],"nextCursor":null}"#).unwrap();
    assert_eq!(list.next_cursor, None);
    assert_eq!(serde_json::to_value(&list).unwrap(), json!({"tools": []}));
}

#[test]
fn nullable_members_and_json_values_keep_their_null() {
    let task = json!({"taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b","ttl":null});
    let decoded: Task = serde_json::from_value(task.clone()).unwrap();
    assert_eq!(decoded.ttl, Some(None));
    assert_eq!(serde_json::to_value(&decoded).unwrap(), task);

    let result: CallToolResult = serde_json::from_str(r#"{"content":[],"structuredContent":null}"#).unwrap();
    assert_eq!(result.structured_content, Some(Value::Null));
    assert_eq!(serde_json::to_value(&result).unwrap(), json!({"content": [], "structuredContent": null}));
}
