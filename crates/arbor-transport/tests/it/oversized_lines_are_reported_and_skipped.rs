use arbor_transport::{Inbound, Transport};
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn a_line_over_the_cap_is_reported_once_and_the_next_line_still_arrives() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (read, _w) = tokio::io::split(a);
    let (_r, mut write) = tokio::io::split(b);
    let (mut reader, _writer) = Transport::new(read, tokio::io::sink()).with_max_frame_bytes(16).into_parts();
    let writer = tokio::spawn(async move {
        write.write_all(b"{\"ok\":1}\n").await.unwrap();
        for _ in 0..100 {
            write.write_all(&[b'x'; 100]).await.unwrap();
        }
        write.write_all(b"\n{\"ok\":2}\n").await.unwrap();
        write
    });
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match reader.recv().await.unwrap().expect("not at eof") {
            Ok(frame) => seen.push(String::from_utf8(frame).unwrap()),
            Err(limit) => seen.push(format!("oversized {limit}")),
        }
    }
    assert_eq!(seen, vec!["{\"ok\":1}", "oversized 16", "{\"ok\":2}"]);
    drop(writer.await.unwrap());
}

#[tokio::test]
async fn a_complete_long_line_in_one_read_is_reported_too() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (read, _w) = tokio::io::split(a);
    let (_r, mut write) = tokio::io::split(b);
    let (mut reader, _writer) = Transport::new(read, tokio::io::sink()).with_max_frame_bytes(4).into_parts();
    write.write_all(b"123456\n1234\n").await.unwrap();
    assert!(reader.fill().await.unwrap());
    assert_eq!(reader.next_buffered(), Some(Inbound::Oversized { limit: 4 }));
    assert_eq!(reader.next_buffered(), Some(Inbound::Frame(b"1234")));
}
