use arbor_transport::{Inbound, Transport};
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn frames_come_out_one_per_line_without_allocation_per_frame() {
    let (a, b) = tokio::io::duplex(1024);
    let (read, _w) = tokio::io::split(a);
    let (_r, mut write) = tokio::io::split(b);
    let (mut reader, _writer) = Transport::new(read, tokio::io::sink()).into_parts();
    write.write_all(b"{\"a\":1}\n\r\n  \n{\"b\":2}\r\n{\"c\"").await.unwrap();
    assert!(reader.fill().await.unwrap());
    assert_eq!(reader.next_buffered(), Some(Inbound::Frame(b"{\"a\":1}")));
    assert_eq!(reader.next_buffered(), Some(Inbound::Frame(b"{\"b\":2}")));
    assert_eq!(reader.next_buffered(), None);
    write.write_all(b":3}\n").await.unwrap();
    assert!(reader.fill().await.unwrap());
    assert_eq!(reader.next_buffered(), Some(Inbound::Frame(b"{\"c\":3}")));
    assert_eq!(reader.next_buffered(), None);
}

#[tokio::test]
async fn a_last_line_without_newline_is_a_frame_and_eof_is_clean() {
    let (a, b) = tokio::io::duplex(1024);
    let (read, _w) = tokio::io::split(a);
    let (mut reader, _writer) = Transport::new(read, tokio::io::sink()).into_parts();
    let (_r, mut write) = tokio::io::split(b);
    write.write_all(b"{\"x\":1}\n{\"y\":2}").await.unwrap();
    drop(write);
    drop(_r);
    let mut frames = Vec::new();
    while let Some(frame) = reader.recv().await.unwrap() {
        frames.push(frame.unwrap());
    }
    assert_eq!(frames, vec![b"{\"x\":1}".to_vec(), b"{\"y\":2}".to_vec()]);
    assert!(!reader.fill().await.unwrap());
}

#[tokio::test]
async fn memory_pairs_carry_frames_both_ways() {
    let (left, right) = Transport::memory_pair();
    let (mut left_rx, left_tx) = left.into_parts();
    let (mut right_rx, right_tx) = right.into_parts();
    left_tx.send(b"ping").unwrap();
    right_tx.send(b"pong").unwrap();
    assert_eq!(right_rx.recv().await.unwrap(), Some(Ok(b"ping".to_vec())));
    assert_eq!(left_rx.recv().await.unwrap(), Some(Ok(b"pong".to_vec())));
}

#[tokio::test]
async fn a_memory_pair_pushes_back_when_its_reader_stalls_and_ends_when_its_writer_closes() {
    let (left, right) = Transport::memory_pair();
    let (_left_rx, left_tx) = left.into_parts();
    let (mut right_rx, _right_tx) = right.into_parts();
    // Far more than the pipe holds: the writer task waits for the reader instead of failing.
    let line = vec![b'x'; 1000];
    for _ in 0..1000 {
        left_tx.send(&line).unwrap();
    }
    let closing = tokio::spawn(async move { left_tx.close().await });
    let mut n = 0;
    while let Some(frame) = right_rx.recv().await.unwrap() {
        assert_eq!(frame.unwrap().len(), 1000);
        n += 1;
    }
    assert_eq!(n, 1000);
    closing.await.unwrap();
}
