//! The `redis-server` of the Redis bus tests: the shared `tests::redis::RedisServer`, and
//! what these tests ask it (`PUBSUB NUMSUB`).

pub use tests::redis::RedisServer;

/// Questions the bus tests ask the server.
pub trait Numsub {
    /// `PUBSUB NUMSUB channel`: how many connections subscribe to it.
    async fn numsub(&self, channel: &str) -> i64;
}

impl Numsub for RedisServer {
    async fn numsub(&self, channel: &str) -> i64 {
        let client = redis::Client::open(self.url()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let (_, n): (String, i64) =
            redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query_async(&mut conn).await.unwrap();
        n
    }
}
