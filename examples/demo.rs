//! Placeholder demo: decodes one JSON-RPC message and prints it.
//! Later issues turn this into the demo server.

fn main() {
    let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
    match arbor_protocol::jsonrpc::decode_message(line) {
        Ok(msg) => println!("decoded: {msg:?}"),
        Err(e) => println!("error: {e}"),
    }
}
