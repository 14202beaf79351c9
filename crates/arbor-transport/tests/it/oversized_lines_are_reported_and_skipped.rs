use arbor_transport::{Inbound, Transport, OVERSIZED_PREFIX_BYTES};
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
    assert_eq!(reader.next_buffered(), Some(Inbound::Oversized { limit: 4, prefix: b"123456" }));
    assert_eq!(reader.next_buffered(), Some(Inbound::Frame(b"1234")));
}

/// The report lends out the line's first bytes, bounded, whether the line ended in the
/// read that found it too long or is still arriving; the next line is unaffected.
#[tokio::test]
async fn the_report_carries_the_first_bytes_of_the_line() {
    let (a, b) = tokio::io::duplex(1 << 20);
    let (read, _w) = tokio::io::split(a);
    let (_r, mut write) = tokio::io::split(b);
    let (mut reader, _writer) = Transport::new(read, tokio::io::sink()).with_max_frame_bytes(64 * 1024).into_parts();
    let line: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let writer = tokio::spawn(async move {
        for _ in 0..2 {
            for chunk in line.chunks(10_000) {
                write.write_all(chunk).await.unwrap();
            }
            write.write_all(b"\n").await.unwrap();
        }
        write.write_all(b"{\"ok\":3}\n").await.unwrap();
        write
    });
    let mut reports = 0;
    loop {
        match reader.next_buffered() {
            Some(Inbound::Oversized { limit, prefix }) => {
                assert_eq!(limit, 64 * 1024);
                assert_eq!(prefix.len(), OVERSIZED_PREFIX_BYTES);
                assert!(prefix.starts_with(b"abcdefghijklmnopqrstuvwxyzabc"), "{:?}", &prefix[..8]);
                reports += 1;
            }
            Some(Inbound::Frame(frame)) => {
                assert_eq!(frame, b"{\"ok\":3}");
                break;
            }
            None => assert!(reader.fill().await.unwrap()),
        }
    }
    assert_eq!(reports, 2);
    drop(writer.await.unwrap());
}

#[tokio::test]
async fn a_short_oversized_line_lends_all_it_has() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (read, _w) = tokio::io::split(a);
    let (_r, mut write) = tokio::io::split(b);
    let (mut reader, _writer) = Transport::new(read, tokio::io::sink()).with_max_frame_bytes(8).into_parts();
    write.write_all(b"{\"id\":1,\"x\":2}\nok\n").await.unwrap();
    assert!(reader.fill().await.unwrap());
    assert_eq!(reader.next_buffered(), Some(Inbound::Oversized { limit: 8, prefix: b"{\"id\":1,\"x\":2}" }));
    assert_eq!(reader.next_buffered(), Some(Inbound::Frame(b"ok")));
}
