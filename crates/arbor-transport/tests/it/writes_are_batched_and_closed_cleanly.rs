use arbor_transport::{SendError, Transport};
use tokio::io::AsyncReadExt;

#[tokio::test]
async fn frames_queued_together_arrive_in_order_and_close_flushes_them() {
    let (a, b) = tokio::io::duplex(1 << 20);
    let (_r, write) = tokio::io::split(a);
    let (mut read, _w) = tokio::io::split(b);
    let (_reader, writer) = Transport::new(tokio::io::empty(), write).into_parts();
    for i in 0..1000 {
        writer.send(format!("{{\"n\":{i}}}").as_bytes()).unwrap();
    }
    writer.send_with(|buf| buf.extend_from_slice(b"{\"last\":true}")).unwrap();
    writer.close().await;
    assert_eq!(writer.send(b"{}"), Err(SendError::Closed));
    let mut out = String::new();
    read.read_to_string(&mut out).await.unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1001);
    assert_eq!(lines[999], "{\"n\":999}");
    assert_eq!(lines[1000], "{\"last\":true}");
}

#[tokio::test]
async fn a_frame_with_a_newline_is_refused_whole() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (_r, write) = tokio::io::split(a);
    let (mut read, _w) = tokio::io::split(b);
    let (_reader, writer) = Transport::new(tokio::io::empty(), write).into_parts();
    assert_eq!(writer.send(b"{\n}"), Err(SendError::EmbeddedNewline));
    assert_eq!(writer.send_with(|buf| buf.extend_from_slice(b"a\nb")), Err(SendError::EmbeddedNewline));
    writer.send(b"{}").unwrap();
    writer.close().await;
    let mut out = String::new();
    read.read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "{}\n");
}

#[cfg(unix)]
#[tokio::test]
async fn frames_cross_a_real_os_pipe() {
    let (tx, rx) = tokio::net::unix::pipe::pipe().unwrap();
    let (_unused_reader, writer) = Transport::new(tokio::io::empty(), tx).into_parts();
    let (mut reader, _unused_writer) = Transport::new(rx, tokio::io::sink()).into_parts();
    for i in 0..100 {
        writer.send(format!("{{\"i\":{i}}}").as_bytes()).unwrap();
    }
    writer.close().await;
    let mut n = 0;
    while let Some(frame) = reader.recv().await.unwrap() {
        assert_eq!(frame.unwrap(), format!("{{\"i\":{n}}}").into_bytes());
        n += 1;
    }
    assert_eq!(n, 100);
}

#[tokio::test]
async fn queued_output_is_measured_and_drains_when_the_peer_reads() {
    let (left, right) = Transport::memory_pair();
    let (_left_rx, writer) = left.into_parts();
    let (mut reader, _right_tx) = right.into_parts();
    let line = vec![b'y'; 10_000];
    for _ in 0..200 {
        writer.send(&line).unwrap();
    }
    // The pipe holds 256 KiB; the rest waits in the writer's queue.
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    assert!(writer.buffered() > 1_000_000, "{}", writer.buffered());
    let drained = tokio::spawn({
        let writer = writer.clone();
        async move { writer.drained_below(100_000).await }
    });
    for _ in 0..200 {
        reader.recv().await.unwrap().unwrap().unwrap();
    }
    drained.await.unwrap();
    assert!(writer.buffered() < 100_000);
}

#[cfg(unix)]
#[tokio::test]
async fn direct_sends_and_queued_sends_keep_their_order_across_a_real_pipe() {
    let (tx, rx) = tokio::net::unix::pipe::pipe().unwrap();
    let (_unused_reader, writer) = Transport::new(tokio::io::empty(), tx).into_parts();
    let (mut reader, _unused_writer) = Transport::new(rx, tokio::io::sink()).into_parts();
    for i in 0..300 {
        let frame = format!("{{\"i\":{i}}}").into_bytes();
        // Mixed: a direct send right behind queued ones must queue behind them.
        if i % 3 == 0 {
            writer.send_now(frame).unwrap();
        } else {
            writer.send(&frame).unwrap();
        }
    }
    assert_eq!(writer.send_now(b"{\n}".to_vec()), Err(SendError::EmbeddedNewline));
    writer.close().await;
    assert_eq!(writer.send_now(b"{}".to_vec()), Err(SendError::Closed));
    let mut n = 0;
    while let Some(frame) = reader.recv().await.unwrap() {
        assert_eq!(frame.unwrap(), format!("{{\"i\":{n}}}").into_bytes());
        n += 1;
    }
    assert_eq!(n, 300);
}

#[tokio::test]
async fn a_direct_send_the_stream_cannot_take_whole_is_finished_by_the_writer_in_order() {
    let (left, right) = Transport::memory_pair();
    let (_left_rx, writer) = left.into_parts();
    let (mut reader, _right_tx) = right.into_parts();
    // Bigger than the 256 KiB pipe: the direct write takes a part, the task the rest.
    let big = vec![b'x'; 400_000];
    writer.send_now(big.clone()).unwrap();
    assert!(writer.buffered() > 0, "the rest of the frame is queued");
    writer.send_now(b"{\"after\":1}".to_vec()).unwrap();
    writer.send(b"{\"after\":2}").unwrap();
    assert_eq!(reader.recv().await.unwrap().unwrap().unwrap(), big);
    assert_eq!(reader.recv().await.unwrap().unwrap().unwrap(), b"{\"after\":1}".to_vec());
    assert_eq!(reader.recv().await.unwrap().unwrap().unwrap(), b"{\"after\":2}".to_vec());
}

#[tokio::test]
async fn a_direct_send_on_an_idle_writer_reaches_the_peer_without_the_writer_task() {
    let (left, right) = Transport::memory_pair();
    let (_left_rx, writer) = left.into_parts();
    let (mut reader, _right_tx) = right.into_parts();
    writer.send_now(b"{\"now\":true}".to_vec()).unwrap();
    // Written before send_now returned: nothing is left queued for the task.
    assert_eq!(writer.buffered(), 0);
    assert_eq!(reader.recv().await.unwrap().unwrap().unwrap(), b"{\"now\":true}".to_vec());
}

#[tokio::test]
async fn a_writer_yielding_to_tasks_only_still_writes_everything_in_order() {
    let (left, right) = Transport::memory_pair();
    let (_left_rx, writer) = left.into_parts();
    writer.yield_to_tasks_only();
    let (mut reader, _right_tx) = right.into_parts();
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let writer = writer.clone();
            tokio::spawn(async move {
                for i in 0..100 {
                    writer.send(format!("{{\"p\":{p},\"i\":{i}}}").as_bytes()).unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    writer.close().await;
    let mut next = [0; 4];
    while let Some(frame) = reader.recv().await.unwrap() {
        let text = String::from_utf8(frame.unwrap()).unwrap();
        let (p, i) = text.strip_prefix("{\"p\":").unwrap().strip_suffix('}').unwrap().split_once(",\"i\":").unwrap();
        let p: usize = p.parse().unwrap();
        assert_eq!(i.parse::<usize>().unwrap(), next[p], "each producer's frames in order");
        next[p] += 1;
    }
    assert_eq!(next, [100; 4]);
}

#[tokio::test(start_paused = true)]
async fn dropping_every_handle_flushes_the_queue_and_ends_the_stream() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (_r, write) = tokio::io::split(a);
    let (mut read, _w) = tokio::io::split(b);
    let (_reader, writer) = Transport::new(tokio::io::empty(), write).into_parts();
    let clone = writer.clone();
    writer.send(b"{\"n\":1}").unwrap();
    drop(writer);
    clone.send(b"{\"n\":2}").unwrap();
    drop(clone);
    // Ends (read_to_string returns) only once the stream is shut down; the paused clock
    // turns a stream left open into a prompt failure.
    let mut out = String::new();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), read.read_to_string(&mut out)).await;
    ended.expect("the stream ended").unwrap();
    assert_eq!(out, "{\"n\":1}\n{\"n\":2}\n");
}
